package engine

import (
	"slices"

	"github.com/rlserver/rlserver/internal/wire"
)

// The script cache is replicated state, kept in every shard as the
// policies are: SCRIPT LOAD goes through every shard's log, so that an
// EVALSHA finds its script whichever shard its keys are on and whichever
// node it is sent to; an EVAL caches its script in the shard it runs on.
// Whether a script is cached decides answers (NOSCRIPT or a run), so the
// cache is in snapshots and the digest, and what it evicts is decided by
// the log alone: scripts cached by EVAL are evicted least recently used
// first, "recently" counted in uses, not time. Scripts loaded with SCRIPT
// LOAD stay until SCRIPT FLUSH, as in Redis. Every cached script is
// charged to the memory limit, in every shard that holds it.

// Bounds on the cache of one shard.
const (
	// maxScripts bounds the scripts loaded with SCRIPT LOAD.
	maxScripts = 10_000
	// maxEvalScripts bounds the scripts cached by EVAL, as Redis 7.4
	// bounds them: past it the least recently used goes.
	maxEvalScripts = 500
	// scriptOverhead is what a cached script is charged beyond its body.
	scriptOverhead = 128
)

// scriptCache is a shard's scripts, by SHA1.
type scriptCache struct {
	byName map[string]*cachedScript
	uses   uint64 // uses so far: the clock of least recently used
	loaded int    // scripts loaded with SCRIPT LOAD
	bytes  int64  // what the scripts are charged
}

type cachedScript struct {
	body   []byte // never changed once cached: runs read it in place
	loaded bool   // by SCRIPT LOAD: never evicted
	used   uint64 // the use that touched it last
}

func newScriptCache() scriptCache {
	return scriptCache{byName: make(map[string]*cachedScript)}
}

// use returns the script named sha and counts a use of it.
func (c *scriptCache) use(sha string) ([]byte, bool) {
	sc, ok := c.byName[sha]
	if !ok {
		return nil, false
	}
	c.uses++
	sc.used = c.uses
	return sc.body, true
}

// cacheScript keeps body, named sha: loaded by SCRIPT LOAD, or cached by
// EVAL. A script over the memory limit is refused with ErrOOM (EVAL still
// runs it, uncached).
func (s *Shard) cacheScript(sha string, body []byte, loaded bool) error {
	c := &s.scripts
	if sc, ok := c.byName[sha]; ok {
		if loaded && !sc.loaded {
			sc.loaded = true
			c.loaded++
		}
		c.uses++
		sc.used = c.uses
		return nil
	}
	if loaded && c.loaded >= maxScripts {
		return ErrScriptCacheFull
	}
	size := int64(len(body)) + scriptOverhead
	if s.memLimit != 0 && s.charged()+size > s.memLimit {
		s.stat.RejectedOOM++
		return ErrOOM
	}
	c.uses++
	c.byName[sha] = &cachedScript{body: slices.Clone(body), loaded: loaded, used: c.uses}
	c.bytes += size
	if loaded {
		c.loaded++
	} else if len(c.byName)-c.loaded > maxEvalScripts {
		c.evictOne()
	}
	return nil
}

// evictOne removes the script cached by EVAL that was used least recently.
// Uses are distinct, so the choice does not depend on the map's order.
func (c *scriptCache) evictOne() {
	var oldest string
	var at uint64
	for sha, sc := range c.byName {
		if !sc.loaded && (oldest == "" || sc.used < at) {
			oldest, at = sha, sc.used
		}
	}
	if oldest != "" {
		c.bytes -= int64(len(c.byName[oldest].body)) + scriptOverhead
		delete(c.byName, oldest)
	}
}

// charged is the memory the limit counts: the keys and the scripts.
func (s *Shard) charged() int64 { return s.keys.charged() + s.scripts.bytes + s.res.bytes }

// appendScripts appends the script cache: the uses so far, the count, then
// each script in SHA1 order, its body, whether it was loaded and its last
// use.
func (c *scriptCache) appendScripts(b []byte) []byte {
	names := make([]string, 0, len(c.byName))
	for sha := range c.byName {
		names = append(names, sha)
	}
	slices.Sort(names)
	b = wire.AppendUvarint(b, c.uses)
	b = wire.AppendUvarint(b, uint64(len(names)))
	for _, sha := range names {
		sc := c.byName[sha]
		b = wire.AppendBytes(b, sc.body)
		b = wire.AppendBool(b, sc.loaded)
		b = wire.AppendUvarint(b, sc.used)
	}
	return b
}

// scripts decodes the scripts section into s.
func (d *decoder) scripts(s *Shard) {
	c := newScriptCache()
	c.uses = d.Uvarint()
	n := d.Uvarint()
	if d.Err() == nil && (n == 0 || n > maxScripts+maxEvalScripts+1 || n > uint64(d.Len())) {
		d.Fail("bad script count")
		return
	}
	for j := uint64(0); j < n && d.Err() == nil; j++ {
		body := d.Bytes(MaxValue)
		if d.Err() != nil || d.Len() == 0 || d.Rest()[0] > 1 {
			d.Fail("bad script")
			return
		}
		sc := &cachedScript{body: slices.Clone(body), loaded: d.Bool()}
		sc.used = d.Uvarint()
		sha := SHA1Hex(body)
		if _, dup := c.byName[sha]; dup || sc.used > c.uses {
			d.failf("script %s twice or used in the future", sha)
			return
		}
		c.byName[sha] = sc
		c.bytes += int64(len(body)) + scriptOverhead
		if sc.loaded {
			c.loaded++
		}
	}
	if d.Err() == nil && (c.loaded > maxScripts || len(c.byName)-c.loaded > maxEvalScripts) {
		d.Fail("too many scripts")
		return
	}
	s.scripts = c
}
