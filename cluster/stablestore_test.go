package cluster

import (
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/persistence"
)

// A term saved after the group's store closed is dropped, not failed:
// hashicorp/raft panics when that save fails, and a heartbeat answered on
// the transport's goroutine can get there during a clean stop (seen once in
// a full test run: "failed to save current term: database not open").
func TestClosedStoreDropsStableWrites(t *testing.T) {
	for _, format := range []persistence.LogFormat{persistence.LogWAL, persistence.LogBolt} {
		st, err := openStores(t.TempDir(), format, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.store.SetUint64([]byte("CurrentTerm"), 3); err != nil {
			t.Fatal(err)
		}
		// Raft sees through every wrapper whether the store takes gaps.
		if m, ok := st.logs.(raft.MonotonicLogStore); !ok || m.IsMonotonic() != (format == persistence.LogWAL) {
			t.Errorf("%v: the cached log's IsMonotonic is wrong (%v)", format, ok)
		}
		if err := st.store.Close(); err != nil {
			t.Fatal(err)
		}
		if err := st.store.SetUint64([]byte("CurrentTerm"), 4); err != nil {
			t.Errorf("%v: SetUint64 after close: %v, want nil", format, err)
		}
		if err := st.store.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
			t.Errorf("%v: Set after close: %v, want nil", format, err)
		}
		if err := st.store.Close(); err != nil {
			t.Errorf("%v: a second Close: %v", format, err)
		}
	}
}
