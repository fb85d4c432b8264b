package chart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The API groups the chart renders objects of. helm lint checks none of
// their fields; strict decoding refuses what the API server would: an
// unknown or misspelt field, a key given twice, a value of the wrong type.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1.AddToScheme, corev1.AddToScheme, rbacv1.AddToScheme,
		policyv1.AddToScheme, networkingv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

var strict = serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()

// monitoringGroup is the Prometheus Operator's API group, whose kinds are
// not in k8s.io/api: they are decoded into the minimal types of
// monitoring.go, as strictly.
const monitoringGroup = "monitoring.coreos.com"

// Decode reads helm template's output, one object per YAML document, each
// decoded strictly into its typed API struct.
func Decode(manifests []byte) (*Objects, error) {
	objs := &Objects{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if isEmpty(doc) {
			continue
		}
		obj, err := decodeOne(doc)
		if err != nil {
			return nil, fmt.Errorf("%w\n--- the document:\n%s", err, doc)
		}
		objs.All = append(objs.All, obj)
	}
}

// decodeOne decodes one document by its apiVersion and kind.
func decodeOne(doc []byte) (runtime.Object, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil {
		return nil, err
	}
	if gv.Group == monitoringGroup {
		return decodeMonitoring(doc, gv.WithKind(meta.Kind))
	}
	obj, _, err := strict.Decode(doc, nil, nil)
	return obj, err
}

// isEmpty reports whether a document holds nothing but comments and
// white space (a template that rendered nothing).
func isEmpty(doc []byte) bool {
	var v any
	return yaml.Unmarshal(doc, &v) == nil && v == nil
}
