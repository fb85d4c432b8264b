package chart

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// What the kubelet does to a container's environment and arguments before
// it starts the container, for those who run the rendered pod spec without
// a kubelet (the StatefulSet emulation): resolve each variable's value or
// source, then expand $(VAR) references.

// Pod is what a pod of the StatefulSet knows of itself: its name (the
// StatefulSet's name and the ordinal) and namespace.
type Pod struct {
	Name      string
	Namespace string
}

// Secrets holds Secrets' data the rendering does not (they are the
// operator's): by Secret name, then key.
type Secrets map[string]map[string]string

// EnvVar is one resolved environment variable.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ResolveEnv returns c's environment as the kubelet gives it to pod:
// values expanded against the variables before them, fieldRef from the
// pod, configMapKeyRef from the rendered ConfigMaps, secretKeyRef from
// secrets. A source it cannot resolve is an error, unless marked optional.
func ResolveEnv(c *corev1.Container, pod Pod, objs *Objects, secrets Secrets) ([]EnvVar, error) {
	var out []EnvVar
	defined := map[string]string{}
	for _, e := range c.Env {
		v, ok, err := envValue(e, pod, objs, secrets, defined)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if !ok {
			continue // an optional source that is absent: the variable is not set
		}
		defined[e.Name] = v
		out = append(out, EnvVar{Name: e.Name, Value: v})
	}
	return out, nil
}

func envValue(e corev1.EnvVar, pod Pod, objs *Objects, secrets Secrets, defined map[string]string) (string, bool, error) {
	from := e.ValueFrom
	switch {
	case from == nil:
		return Expand(e.Value, lookupIn(defined)), true, nil
	case from.FieldRef != nil:
		switch from.FieldRef.FieldPath {
		case "metadata.name":
			return pod.Name, true, nil
		case "metadata.namespace":
			return pod.Namespace, true, nil
		}
		return "", false, fmt.Errorf("fieldRef %s: only metadata.name and metadata.namespace are emulated", from.FieldRef.FieldPath)
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := objs.ConfigMap(ref.Name)
		if err != nil {
			return "", false, orOptional(optional, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", false, orOptional(optional, fmt.Errorf("ConfigMap %s has no key %q", ref.Name, ref.Key))
		}
		return v, true, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		v, ok := secrets[ref.Name][ref.Key]
		if !ok {
			return "", false, orOptional(optional, fmt.Errorf("Secret %s key %q: not given", ref.Name, ref.Key))
		}
		return v, true, nil
	}
	return "", false, fmt.Errorf("a source that is not emulated: %+v", *from)
}

// orOptional is err, or nil for an optional source.
func orOptional(optional bool, err error) error {
	if optional {
		return nil
	}
	return err
}

// ExpandAll expands $(VAR) in each of list with env.
func ExpandAll(list []string, env []EnvVar) []string {
	vars := map[string]string{}
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Expand(s, lookupIn(vars))
	}
	return out
}

func lookupIn(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
}

// Expand replaces $(VAR) in s as the kubelet does (Kubernetes'
// third_party/forked/golang/expansion): a defined variable by its value,
// an undefined one left as written, $$ as a single $ (so $$(VAR) stays
// $(VAR)), and any other $ as it is.
func Expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	checkpoint := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		b.WriteString(s[checkpoint:i])
		text, isVar, advance := readReference(s[i+1:])
		if isVar {
			if v, ok := lookup(text); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + text + ")")
			}
		} else {
			b.WriteString(text)
		}
		i += advance
		checkpoint = i + 1
	}
	b.WriteString(s[checkpoint:])
	return b.String()
}

// readReference reads what follows a $: a variable's name in parentheses
// (isVar), or the text it stands for, and how many bytes it took.
func readReference(s string) (text string, isVar bool, advance int) {
	switch s[0] {
	case '$':
		return "$", false, 1
	case '(':
		if end := strings.IndexByte(s, ')'); end >= 0 {
			return s[1:end], true, end + 1
		}
		return "$(", false, 1
	}
	return "$" + s[:1], false, 1
}
