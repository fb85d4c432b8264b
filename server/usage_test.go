package server

import (
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/cluster"
)

// FORCE, RL.RESERVE and RL.SETTLE on the wire: a negative remaining is an
// integer like any other, in RESP2 and RESP3; a reservation's id is a bulk
// string after the decision's fields (a null when refused), named
// reservation_id in RESP3; INFO reservations counts them.
func TestUsageOnTheWire(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.expect(decisionWith(0, 1000, -200, 12_000, 72_000), "RL.TOKEN", "t", "1000", "1000", "60000", "COST", "1200", "FORCE")
	c.expect(decisionWith(0, 1000, -200, 12_060, 72_000), "RL.TOKEN", "t", "1000", "1000", "60000")

	seq := int64(testNow) << 20
	id := "{" + cluster.SlotTag(cluster.Slot([]byte("k"))) + "}" + strconv.FormatInt(seq, 10) + ":k"
	c.expect("*6\r\n"+intReply(1)+intReply(10)+intReply(6)+intReply(0)+intReply(4000)+bulkReply(id),
		"RL.RESERVE", "TOKEN", "k", "10", "1", "1000", "COST", "4", "TTL", "5000")
	c.expect("*6\r\n"+intReply(0)+intReply(10)+intReply(6)+intReply(-1)+intReply(4000)+"$-1\r\n",
		"RL.RESERVE", "TOKEN", "k", "10", "1", "1000", "COST", "11")
	c.expect(arrayReply(bulkReply("k")), "COMMAND", "GETKEYS", "RL.SETTLE", id, "1")
	c.expect(decisionWith(1, 10, 9, 0, 1000), "RL.SETTLE", id, "1")
	c.expect(decisionWith(1, 10, 9, 0, 1000), "RL.SETTLE", id, "7") // the first outcome
	c.expect(errReply("ERR invalid reservation id: RL.SETTLE takes the id RL.RESERVE replied"), "RL.SETTLE", "k", "1")
	c.expect(errReply("ERR no such reservation (never made, or settled or expired more than 30 s ago)"),
		"RL.SETTLE", "{x}"+strconv.FormatInt(seq+1, 10)+":k", "1")
	info, _ := parse(t, c.do("INFO", "reservations")).(string)
	if want := "# Reservations\r\nrl_reservations_pending:0\r\nrl_reserved:0\r\nrl_reservations_made:1\r\n" +
		"rl_reservations_settled:1\r\nrl_reservations_expired:0\r\n"; info != want {
		t.Errorf("INFO reservations: %q, want %q", info, want)
	}

	c.do("HELLO", "3")
	id2 := "{" + cluster.SlotTag(cluster.Slot([]byte("s"))) + "}" + strconv.FormatInt(seq, 10) + ":s" // another shard: its first seq
	c.expect("%7\r\n"+bulkReply("allowed")+intReply(1)+bulkReply("limit")+intReply(3)+bulkReply("remaining")+intReply(1)+
		bulkReply("retry_after_ms")+intReply(0)+bulkReply("reset_after_ms")+intReply(2000)+
		bulkReply("delay_ms")+intReply(0)+bulkReply("reservation_id")+bulkReply(id2),
		"RL.RESERVE", "SHAPE", "s", "3", "1", "1000", "COST", "2")
	c.expect("%6\r\n"+bulkReply("allowed")+intReply(0)+bulkReply("limit")+intReply(3)+bulkReply("remaining")+intReply(3)+
		bulkReply("retry_after_ms")+intReply(-1)+bulkReply("reset_after_ms")+intReply(0)+bulkReply("reservation_id")+"_\r\n",
		"RL.RESERVE", "FIXED", "f", "3", "1000", "COST", "4", "TTL", "10")
	c.expect("%5\r\n"+bulkReply("allowed")+intReply(0)+bulkReply("limit")+intReply(3)+bulkReply("remaining")+intReply(-4)+
		bulkReply("retry_after_ms")+intReply(4000)+bulkReply("reset_after_ms")+intReply(7000),
		"RL.SETTLE", id2, "7")
}
