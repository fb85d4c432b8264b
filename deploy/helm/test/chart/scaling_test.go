package chart

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

// TestScalingRestartsNoPod renders 1, 3 and 5 replicas and checks that the
// pod template is the same: a change of replicas must only add or remove
// pods (a template that changed would have the StatefulSet restart every
// pod, the whole cluster at once for a rollout of nothing). Only the
// members ConfigMap and the replica count differ.
func TestScalingRestartsNoPod(t *testing.T) {
	t.Parallel()
	var first *rendering
	for _, n := range []int{1, 3, 5} {
		r := render(t, Release{Values: fmt.Sprintf("replicas: %d", n)})
		if first == nil {
			first = r
			continue
		}
		if !equality.Semantic.DeepEqual(first.set.Spec.Template, r.set.Spec.Template) {
			t.Errorf("replicas %d changes the pod template:\n%+v\nvs\n%+v", n, first.set.Spec.Template, r.set.Spec.Template)
		}
		if got := len(strings.Split(r.membersList(t), ",")); got != n {
			t.Errorf("replicas %d: the member list has %d entries", n, got)
		}
	}
}

// membersList is the members ConfigMap's list.
func (r *rendering) membersList(t *testing.T) string {
	t.Helper()
	ref := r.env(t, "RLSERVER_CLUSTER").ValueFrom.ConfigMapKeyRef
	cm, err := r.objs.ConfigMap(ref.Name)
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data[ref.Key]
}
