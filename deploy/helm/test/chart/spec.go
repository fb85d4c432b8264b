package chart

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// PodSpec is what it takes to run the rendered StatefulSet's pods without
// Kubernetes: the container's command, arguments and environment as
// rendered, the ConfigMaps they refer to, the volumes to give each pod, and
// the names the pods are reached at.
type PodSpec struct {
	StatefulSet    string                       `json:"statefulSet"`
	Namespace      string                       `json:"namespace"`
	ServiceName    string                       `json:"serviceName"`
	Replicas       int32                        `json:"replicas"`
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
	s := &PodSpec{
		StatefulSet: set.Name, Namespace: namespace, ServiceName: set.Spec.ServiceName,
		Image: c.Image, Command: c.Command, Args: c.Args, Env: c.Env, Ports: c.Ports,
		VolumeMounts: c.VolumeMounts, ConfigMaps: map[string]map[string]string{},
	}
	if set.Spec.Replicas != nil {
		s.Replicas = *set.Spec.Replicas
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
