package cluster

import (
	"strings"
	"testing"
)

func TestSlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16 check value %#x, want 0x31C3", got)
	}
	same := [][2]string{
		{"foo{bar}{zap}", "bar"},
		{"{user:ada}:sec", "{user:ada}:min"},
		{"foo{{bar}}zap", "{bar"},
		{"foo{}{bar}", "foo{}{bar}"},
		{"{}", "{}"},
	}
	for _, p := range same {
		if Slot([]byte(p[0])) != Slot([]byte(p[1])) {
			t.Errorf("%q and %q hash to different slots", p[0], p[1])
		}
	}
	// Values Redis 7.0.15's CLUSTER KEYSLOT gives.
	known := map[string]uint16{"foo": 12182, "bar": 5061, "hello": 866, "user:ada": 12861, "rl:{user:ada}": 12861, "": 0}
	for k, want := range known {
		if got := Slot([]byte(k)); got != want {
			t.Errorf("Slot(%q) = %d, want %d", k, got, want)
		}
	}
}

func TestSlotRangesCoverEverySlotOnce(t *testing.T) {
	for _, shards := range []int{1, 2, 3, 7, 8, 16, 100} {
		next := 0
		for s := range shards {
			first, last := SlotRange(s, shards)
			if first != next || last < first {
				t.Fatalf("%d shards: shard %d has [%d, %d], want it to start at %d", shards, s, first, last, next)
			}
			for _, slot := range []int{first, last} {
				if got := ShardOfSlot(uint16(slot), shards); got != s {
					t.Fatalf("%d shards: slot %d maps to %d, range says %d", shards, slot, got, s)
				}
			}
			next = last + 1
		}
		if next != SlotCount {
			t.Fatalf("%d shards cover %d slots", shards, next)
		}
	}
}

// Every slot has a tag, short, without braces, that hashes to it.
func TestSlotTags(t *testing.T) {
	for s := range uint16(SlotCount) {
		tag := SlotTag(s)
		if tag == "" || len(tag) > 4 || strings.ContainsAny(tag, "{}") || Slot([]byte("{"+tag+"}42:user:ada")) != s {
			t.Fatalf("slot %d: tag %q", s, tag)
		}
	}
}
