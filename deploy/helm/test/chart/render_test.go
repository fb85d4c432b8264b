package chart

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// helmTimeout bounds one helm run; rendering takes about a tenth of a
// second.
const helmTimeout = time.Minute

// helm returns the helm binary, and fails the test, saying how to get one,
// when there is none: the chart's tests never skip.
func helm(t *testing.T) string {
	t.Helper()
	h, err := FindHelm()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// template runs helm template for r, and returns its output or error.
func template(t *testing.T, r Release) ([]byte, error) {
	t.Helper()
	if r.Name == "" {
		r.Name = "rl"
	}
	if r.Namespace == "" {
		r.Namespace = "default"
	}
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	return Template(ctx, helm(t), r)
}

// rendering is one rendering of the chart, decoded, with the parts every
// check looks at.
type rendering struct {
	release Release
	objs    *Objects
	set     *appsv1.StatefulSet
	c       *corev1.Container
	flags   map[string]string // --name=value, or --name alone as ""
}

// render renders r and decodes every object strictly; it fails the test
// when helm or the decoding does.
func render(t *testing.T, r Release) *rendering {
	t.Helper()
	if r.Name == "" {
		r.Name = "rl"
	}
	if r.Namespace == "" {
		r.Namespace = "default"
	}
	out, err := template(t, r)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatalf("strict decoding: %v", err)
	}
	set, err := objs.StatefulSet()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Container(set, "rlserver")
	if err != nil {
		t.Fatal(err)
	}
	flags, err := parseFlags(c.Args)
	if err != nil {
		t.Fatal(err)
	}
	return &rendering{release: r, objs: objs, set: set, c: c, flags: flags}
}

// parseFlags reads args written --name=value or --name; a flag given twice
// is an error, as the chart never repeats one.
func parseFlags(args []string) (map[string]string, error) {
	flags := map[string]string{}
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			return nil, errors.New("an argument that is not a --flag: " + a)
		}
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if _, twice := flags[name]; twice {
			return nil, errors.New("--" + name + " given twice")
		}
		flags[name] = value
	}
	return flags, nil
}

// flag returns --name's value, failing the test when it is absent.
func (r *rendering) flag(t *testing.T, name string) string {
	t.Helper()
	v, ok := r.flags[name]
	if !ok {
		t.Fatalf("no --%s in the args %q", name, r.c.Args)
	}
	return v
}

// env returns the container's variable called name.
func (r *rendering) env(t *testing.T, name string) corev1.EnvVar {
	t.Helper()
	for _, e := range r.c.Env {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no env %s in %+v", name, r.c.Env)
	return corev1.EnvVar{}
}
