package engine

import "crypto/sha256"

// WATCH, as a compare-and-set the shard makes when it applies a
// transaction: WATCH reads each key's fingerprint (OpWatch, WatchRead) and
// EXEC puts, before the transaction's commands, one OpWatch (WatchGuard) a
// key with the fingerprint WATCH read. A guard whose key no longer has that
// fingerprint skips every command after it in its group, so the
// transaction applies whole, or not at all, in the same step in which its
// keys are compared: no write can slip between the comparison and the
// transaction, on any replica.
//
// A fingerprint is the SHA-256 of the key's canonical encoding (its kind,
// state, expiry and value: appendEntry's, the digest's), empty for a key
// that does not exist. It is a pure function of the key's state, so every
// replica compares alike. A key set to another value and back between
// WATCH and EXEC has its old fingerprint again: unlike Redis, which counts
// any write, that does not abort the transaction.

// The modes of OpWatch (Args[0]).
const (
	WatchRead  = 0 // Text: the key's fingerprint, "" if absent
	WatchGuard = 1 // Value: the fingerprint expected; Args[1]: commands guarded
)

// FingerprintLen is the length of a live key's fingerprint.
const FingerprintLen = sha256.Size

// fingerprint is key's fingerprint at now, "" when it is not live. It
// reclaims nothing, so that Inspect may read it.
func (s *Shard) fingerprint(key []byte, now int64) string {
	i := s.keys.find(key)
	if i < 0 || s.keys.expiresAt(i) <= now {
		return ""
	}
	sum := sha256.Sum256(appendEntry(nil, &s.keys, i, now))
	return string(sum[:])
}

// watch applies OpWatch to cmds[0]: a read answers the fingerprint; a
// guard answers OK when its key has the fingerprint expected, and
// otherwise a null array, and then skips the commands it guards, which
// answer a null array too. It returns how many commands it skipped.
func (s *Shard) watch(now int64, cmds []Command, out []Result) int {
	c, r := &cmds[0], &out[0]
	fp := s.fingerprint(c.Key, now)
	if c.Args[0] == WatchRead {
		r.Type, r.Text = ResBulk, fp
		return 0
	}
	if fp == string(c.Value) {
		r.Type = ResOK
		return 0
	}
	n := int(min(c.Args[1], int64(len(cmds)-1)))
	for j := range n + 1 {
		out[j] = Result{Type: ResNilArray}
	}
	return n
}

// checkWatch checks OpWatch: a read carries no fingerprint and guards
// nothing; a guard's fingerprint is a live key's or empty.
func checkWatch(c Command) error {
	if (c.Args[0] == WatchRead && (len(c.Value) != 0 || c.Args[1] != 0)) ||
		(c.Args[0] == WatchGuard && len(c.Value) != 0 && len(c.Value) != FingerprintLen) {
		return paramError("invalid WATCH")
	}
	return nil
}
