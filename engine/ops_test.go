package engine

import "testing"

// A script may call the ops on one key (RENAME: two), and none of the whole
// shard, nor another script.
func TestScriptsCallTheOpsOnKeys(t *testing.T) {
	onKeys := map[Op]bool{}
	for _, op := range []Op{OpSliding, OpFixed, OpLog, OpToken, OpLeaky, OpGCRA, OpThrottle, OpShape, OpQuota,
		OpAcquire, OpRelease, OpCheck, OpAll, OpDel, OpExists, OpType, OpPTTL, OpTTL, OpInfo, OpUsage,
		OpGet, OpSet, OpIncrBy, OpExpire, OpHGet, OpHSet, OpHMGet, OpHIncrBy, OpHIncrByFloat, OpHDel, OpHExists,
		OpHGetAll, OpHLen, OpPush, OpPop, OpLIndex, OpLRange, OpLTrim, OpLLen, OpRename, OpShare, OpUnshare} {
		onKeys[op] = true
	}
	for op := Op(0); op < 255; op++ {
		if got := op.fromScript(); got != onKeys[op] {
			t.Errorf("op %d: fromScript %v", op, got)
		}
	}
}

// A bucket's algorithm knows whether its first parameter is a burst as its
// row's parameters say.
func TestBucketsAgreeWithTheirRows(t *testing.T) {
	for op := opNone + 1; op < opCount; op++ {
		spec := op.Spec()
		if a, ok := spec.algo.(bucketAlgorithm); ok && (a.op != op || a.burst != (spec.Params[0].Role == RoleBurst)) {
			t.Errorf("op %d: %+v", op, a)
		}
	}
}
