package chart

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Objects are what one rendering of the chart holds, typed.
type Objects struct {
	All []runtime.Object
}

// of returns the objects of type T.
func of[T runtime.Object](o *Objects) []T {
	var out []T
	for _, obj := range o.All {
		if t, ok := obj.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// named returns the object of type T called name, or an error.
func named[T runtime.Object](o *Objects, name string, nameOf func(T) string) (T, error) {
	for _, t := range of[T](o) {
		if nameOf(t) == name {
			return t, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("no %T named %q", zero, name)
}

// StatefulSets returns the StatefulSets.
func (o *Objects) StatefulSets() []*appsv1.StatefulSet { return of[*appsv1.StatefulSet](o) }

// StatefulSet returns the only StatefulSet, or an error.
func (o *Objects) StatefulSet() (*appsv1.StatefulSet, error) {
	sets := o.StatefulSets()
	if len(sets) != 1 {
		return nil, fmt.Errorf("the chart rendered %d StatefulSets, not 1", len(sets))
	}
	return sets[0], nil
}

// Services returns the Services.
func (o *Objects) Services() []*corev1.Service { return of[*corev1.Service](o) }

// Service returns the Service called name.
func (o *Objects) Service(name string) (*corev1.Service, error) {
	return named(o, name, func(s *corev1.Service) string { return s.Name })
}

// ConfigMaps returns the ConfigMaps.
func (o *Objects) ConfigMaps() []*corev1.ConfigMap { return of[*corev1.ConfigMap](o) }

// ConfigMap returns the ConfigMap called name.
func (o *Objects) ConfigMap(name string) (*corev1.ConfigMap, error) {
	return named(o, name, func(c *corev1.ConfigMap) string { return c.Name })
}

// ServiceAccounts returns the ServiceAccounts.
func (o *Objects) ServiceAccounts() []*corev1.ServiceAccount { return of[*corev1.ServiceAccount](o) }

// Roles returns the Roles.
func (o *Objects) Roles() []*rbacv1.Role { return of[*rbacv1.Role](o) }

// RoleBindings returns the RoleBindings.
func (o *Objects) RoleBindings() []*rbacv1.RoleBinding { return of[*rbacv1.RoleBinding](o) }

// PodDisruptionBudgets returns the PodDisruptionBudgets.
func (o *Objects) PodDisruptionBudgets() []*policyv1.PodDisruptionBudget {
	return of[*policyv1.PodDisruptionBudget](o)
}

// NetworkPolicies returns the NetworkPolicies.
func (o *Objects) NetworkPolicies() []*networkingv1.NetworkPolicy {
	return of[*networkingv1.NetworkPolicy](o)
}

// ServiceMonitors returns the ServiceMonitors.
func (o *Objects) ServiceMonitors() []*ServiceMonitor { return of[*ServiceMonitor](o) }

// PrometheusRules returns the PrometheusRules.
func (o *Objects) PrometheusRules() []*PrometheusRule { return of[*PrometheusRule](o) }

// Container returns the StatefulSet's container called name.
func Container(set *appsv1.StatefulSet, name string) (*corev1.Container, error) {
	for i := range set.Spec.Template.Spec.Containers {
		if c := &set.Spec.Template.Spec.Containers[i]; c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("StatefulSet %s has no container %q", set.Name, name)
}
