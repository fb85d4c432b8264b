package chart

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// The Prometheus Operator's kinds, with only the fields the chart sets:
// decoded strictly, a field the chart renders that is not here fails the
// test, so a new field is added here on purpose, after checking it against
// the operator's CRD (monitoring.coreos.com/v1).

// ServiceMonitor is monitoring.coreos.com/v1 ServiceMonitor.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ServiceMonitorSpec `json:"spec"`
}

// ServiceMonitorSpec is the part of its spec the chart sets.
type ServiceMonitorSpec struct {
	Selector          metav1.LabelSelector `json:"selector"`
	NamespaceSelector NamespaceSelector    `json:"namespaceSelector"`
	Endpoints         []Endpoint           `json:"endpoints"`
}

// NamespaceSelector names the namespaces of the Services.
type NamespaceSelector struct {
	MatchNames []string `json:"matchNames"`
}

// Endpoint is one scraped port of the selected Services.
type Endpoint struct {
	Port              string          `json:"port"`
	Path              string          `json:"path"`
	Interval          string          `json:"interval"`
	ScrapeTimeout     string          `json:"scrapeTimeout"`
	Relabelings       []RelabelConfig `json:"relabelings,omitempty"`
	MetricRelabelings []RelabelConfig `json:"metricRelabelings,omitempty"`
}

// RelabelConfig is one relabelling step.
type RelabelConfig struct {
	SourceLabels []string `json:"sourceLabels,omitempty"`
	TargetLabel  string   `json:"targetLabel,omitempty"`
	Regex        string   `json:"regex,omitempty"`
	Replacement  *string  `json:"replacement,omitempty"`
	Action       string   `json:"action,omitempty"`
}

// PrometheusRule is monitoring.coreos.com/v1 PrometheusRule.
type PrometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PrometheusRuleSpec `json:"spec"`
}

// PrometheusRuleSpec holds rule groups, as a Prometheus rule file does.
type PrometheusRuleSpec struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is a group of rules.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// DeepCopyObject makes ServiceMonitor a runtime.Object; the tests never
// copy it.
func (s *ServiceMonitor) DeepCopyObject() runtime.Object { c := *s; return &c }

// DeepCopyObject makes PrometheusRule a runtime.Object.
func (p *PrometheusRule) DeepCopyObject() runtime.Object { c := *p; return &c }

// decodeMonitoring decodes a Prometheus Operator object strictly: unknown
// fields and duplicate keys are errors.
func decodeMonitoring(doc []byte, gvk schema.GroupVersionKind) (runtime.Object, error) {
	var obj runtime.Object
	switch {
	case gvk.Version != "v1":
		return nil, fmt.Errorf("%s: only monitoring.coreos.com/v1 is known", gvk)
	case gvk.Kind == "ServiceMonitor":
		obj = &ServiceMonitor{}
	case gvk.Kind == "PrometheusRule":
		obj = &PrometheusRule{}
	default:
		return nil, fmt.Errorf("%s: not a kind the chart renders", gvk)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: strict decoding: %w", gvk.Kind, err)
	}
	return obj, nil
}
