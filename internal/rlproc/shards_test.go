package rlproc

import (
	"reflect"
	"testing"
)

// CLUSTER SHARDS comes as a flat array of names and values in RESP2 and as
// a map in RESP3; fields reads both alike.
func TestFieldsReadsBothProtocols(t *testing.T) {
	want := map[string]any{"id": "ab12", "role": "master", "health": "online"}
	for _, tc := range []struct {
		name  string
		reply any
		want  map[string]any
	}{
		{"RESP2 flat array", []any{"id", "ab12", "role", "master", "health", "online"}, want},
		{"RESP3 map", map[any]any{"id": "ab12", "role": "master", "health": "online"}, want},
		{"odd array: the last name has no value", []any{"id", "ab12", "role"}, map[string]any{"id": "ab12"}},
		{"not a reply of fields", int64(3), map[string]any{}},
	} {
		if got := fields(tc.reply); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: fields(%v) = %v, want %v", tc.name, tc.reply, got, tc.want)
		}
	}
}

func TestRedisIDIsTheSHA1OfTheNodeID(t *testing.T) {
	if got, want := RedisID("n1"), "40b3eab63f3f1d4fa48e09559401c5ed4efceaa6"; got != want { // printf n1 | sha1sum
		t.Errorf("RedisID(n1) = %q, want %q", got, want)
	}
}
