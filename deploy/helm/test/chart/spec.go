package chart

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PodSpec is what it takes to run the rendered StatefulSet's pods without
// Kubernetes: the container's command, arguments and environment as
// rendered, the ConfigMaps they refer to, the volumes to give each pod, the
// names the pods are reached at, and what the controller and the kubelet
// do with them (start and stop them, probe them, route Services to them).
type PodSpec struct {
	StatefulSet string `json:"statefulSet"`
	Namespace   string `json:"namespace"`
	ServiceName string `json:"serviceName"`
	Replicas    int32  `json:"replicas"`
	// PodManagementPolicy is OrderedReady or Parallel.
	PodManagementPolicy string `json:"podManagementPolicy"`
	// WhenScaled is what becomes of a pod's claims when a scale-down
	// removes the pod: Retain (the default) or Delete.
	WhenScaled string `json:"whenScaled"`
	// TerminationGracePeriodSeconds is how long a pod may take to stop,
	// its preStop hook included, before it is killed (30 when unset).
	TerminationGracePeriodSeconds int64             `json:"terminationGracePeriodSeconds"`
	ReadinessProbe                *corev1.Probe     `json:"readinessProbe"`
	Lifecycle                     *corev1.Lifecycle `json:"lifecycle,omitempty"`
	// PodSecurityContext and SecurityContext are the pod's and the
	// container's.
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	SecurityContext    *corev1.SecurityContext    `json:"securityContext,omitempty"`
	// Services are the Services that select the pods.
	Services []Service `json:"services"`

	Image          string                       `json:"image"`
	Command        []string                     `json:"command"` // empty: the image's entrypoint
	Args           []string                     `json:"args"`
	Env            []corev1.EnvVar              `json:"env"`
	Ports          []corev1.ContainerPort       `json:"ports"`
	VolumeMounts   []corev1.VolumeMount         `json:"volumeMounts"`
	ClaimTemplates []string                     `json:"claimTemplates"` // a volume per pod each: <name>-<pod>
	ConfigMaps     map[string]map[string]string `json:"configMaps"`
	// Pods are the pods the StatefulSet has at its replicas, each with its
	// environment resolved and $(VAR) expanded as the kubelet does.
	Pods []ResolvedPod `json:"pods"`
}

// Service is a Service that selects the StatefulSet's pods, as kube-proxy
// and the cluster's DNS serve it.
type Service struct {
	Name string `json:"name"`
	// Headless: clusterIP None, so its name resolves to the pods' own
	// addresses (and each pod's name under it, for the StatefulSet's
	// serviceName); otherwise it resolves to a virtual address that
	// forwards each connection to one of the ready pods.
	Headless bool `json:"headless"`
	// PublishNotReadyAddresses: the pods that are not ready are in it too.
	PublishNotReadyAddresses bool          `json:"publishNotReadyAddresses"`
	Ports                    []ServicePort `json:"ports"`
}

// ServicePort is a port of a Service, its target resolved to the
// container's port number.
type ServicePort struct {
	Name       string `json:"name"`
	Port       int32  `json:"port"`
	TargetPort int32  `json:"targetPort"`
}

// ResolvedPod is one pod's command, arguments and environment, ready to
// run.
type ResolvedPod struct {
	Name    string   `json:"name"`
	Address string   `json:"address"` // <pod>.<serviceName>.<namespace>.svc
	Command []string `json:"command"`
	Args    []string `json:"args"`
	Env     []EnvVar `json:"env"`
}

// Spec reads the rlserver container of the rendered StatefulSet, and
// resolves every pod's environment with secrets.
func Spec(objs *Objects, namespace string, secrets Secrets) (*PodSpec, error) {
	set, err := objs.StatefulSet()
	if err != nil {
		return nil, err
	}
	c, err := Container(set, "rlserver")
	if err != nil {
		return nil, err
	}
	pod := set.Spec.Template.Spec
	s := &PodSpec{
		StatefulSet: set.Name, Namespace: namespace, ServiceName: set.Spec.ServiceName,
		PodManagementPolicy: string(set.Spec.PodManagementPolicy), WhenScaled: "Retain",
		TerminationGracePeriodSeconds: corev1.DefaultTerminationGracePeriodSeconds,
		ReadinessProbe:                c.ReadinessProbe, Lifecycle: c.Lifecycle,
		PodSecurityContext: pod.SecurityContext, SecurityContext: c.SecurityContext,
		Image: c.Image, Command: c.Command, Args: c.Args, Env: c.Env, Ports: c.Ports,
		VolumeMounts: c.VolumeMounts, ConfigMaps: map[string]map[string]string{},
	}
	if set.Spec.Replicas != nil {
		s.Replicas = *set.Spec.Replicas
	}
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = string(appsv1.OrderedReadyPodManagement)
	}
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenScaled != "" {
		s.WhenScaled = string(p.WhenScaled)
	}
	if pod.TerminationGracePeriodSeconds != nil {
		s.TerminationGracePeriodSeconds = *pod.TerminationGracePeriodSeconds
	}
	if s.Services, err = services(objs, set, c); err != nil {
		return nil, err
	}
	for _, t := range set.Spec.VolumeClaimTemplates {
		s.ClaimTemplates = append(s.ClaimTemplates, t.Name)
	}
	for _, cm := range objs.ConfigMaps() {
		s.ConfigMaps[cm.Name] = cm.Data
	}
	for i := range s.Replicas {
		pod := Pod{Name: fmt.Sprintf("%s-%d", set.Name, i), Namespace: namespace}
		env, err := ResolveEnv(c, pod, objs, secrets)
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", pod.Name, err)
		}
		s.Pods = append(s.Pods, ResolvedPod{
			Name:    pod.Name,
			Address: fmt.Sprintf("%s.%s.%s.svc", pod.Name, set.Spec.ServiceName, namespace),
			Command: ExpandAll(c.Command, env),
			Args:    ExpandAll(c.Args, env),
			Env:     env,
		})
	}
	return s, nil
}

// services returns the Services that select set's pods, their target
// ports resolved against c's ports.
func services(objs *Objects, set *appsv1.StatefulSet, c *corev1.Container) ([]Service, error) {
	var out []Service
	for _, svc := range objs.Services() {
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(set.Spec.Template.Labels)) {
			continue
		}
		s := Service{
			Name: svc.Name, Headless: svc.Spec.ClusterIP == corev1.ClusterIPNone,
			PublishNotReadyAddresses: svc.Spec.PublishNotReadyAddresses,
		}
		for _, p := range svc.Spec.Ports {
			target, err := targetPort(p, c)
			if err != nil {
				return nil, fmt.Errorf("Service %s: %w", svc.Name, err)
			}
			s.Ports = append(s.Ports, ServicePort{Name: p.Name, Port: p.Port, TargetPort: target})
		}
		out = append(out, s)
	}
	return out, nil
}

// targetPort is the container's port number p forwards to: its
// targetPort's number, the container's port of that name, or p's own port
// when it has no targetPort.
func targetPort(p corev1.ServicePort, c *corev1.Container) (int32, error) {
	switch {
	case p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal == 0:
		return p.Port, nil
	case p.TargetPort.Type == intstr.Int:
		return p.TargetPort.IntVal, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.TargetPort.StrVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("port %s: targetPort %q names no port of container %s", p.Name, p.TargetPort.StrVal, c.Name)
}
