// Command render prints what it takes to run the rlserver chart's
// StatefulSet without Kubernetes, as JSON: the rendered container's
// command, args and env, the ConfigMaps they read, the volumes and ports,
// and for each pod at the rendered replicas its environment resolved and
// its args expanded as the kubelet would. The StatefulSet emulation runs
// these in containers of the image, one volume per pod.
//
//	go run ./render [-release rl] [-namespace default] [-f values.yaml]... [-set key=value]... [-secret name/key=value]...
//
// It needs helm ($HELM, or on PATH). Secrets the chart refers to (the
// password's, say) are the operator's: give their values with -secret.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rlserver/rlserver/deploy/helm/test/chart"
)

// list is a repeatable flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

// run renders the chart as args say and writes the pods' spec to w.
func run(args []string, w io.Writer) error {
	var files, sets, secretArgs list
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	release := fs.String("release", "rl", "the release's name")
	namespace := fs.String("namespace", "default", "the release's namespace")
	fs.Var(&files, "f", "a values file (repeatable)")
	fs.Var(&sets, "set", "a value, as helm --set takes it (repeatable)")
	fs.Var(&secretArgs, "secret", "a Secret's value the pods read: name/key=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	secrets, err := parseSecrets(secretArgs)
	if err != nil {
		return err
	}
	helm, err := chart.FindHelm()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	manifests, err := chart.Template(ctx, helm, chart.Release{Name: *release, Namespace: *namespace, ValueFiles: files, Set: sets})
	if err != nil {
		return err
	}
	objs, err := chart.Decode(manifests)
	if err != nil {
		return err
	}
	spec, err := chart.Spec(objs, *namespace, secrets)
	if err != nil {
		return err
	}
	out := json.NewEncoder(w)
	out.SetIndent("", "  ")
	return out.Encode(spec)
}

// parseSecrets reads -secret name/key=value arguments.
func parseSecrets(args []string) (chart.Secrets, error) {
	secrets := chart.Secrets{}
	for _, a := range args {
		ref, value, ok := strings.Cut(a, "=")
		name, key, ok2 := strings.Cut(ref, "/")
		if !ok || !ok2 || name == "" || key == "" {
			return nil, fmt.Errorf("-secret %q: want name/key=value", a)
		}
		if secrets[name] == nil {
			secrets[name] = map[string]string{}
		}
		secrets[name][key] = value
	}
	return secrets, nil
}
