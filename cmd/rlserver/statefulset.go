package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// In Kubernetes the number of nodes a StatefulSet should have is its
// .spec.replicas, which a scale-down changes before the controller deletes
// the pods beyond it: a pod that reads it at SIGTERM knows whether it is
// being removed or only restarted. A ConfigMap mounted as a file would say
// the same, but the kubelet refreshes a mounted file up to a minute after
// the change, and a pod deleted meanwhile would read the old number and
// stay in the cluster as a member that never comes back. So the node asks
// the API server, as the pod's service account (which the chart lets read
// its own StatefulSet, and nothing else).

// serviceAccountDir holds a pod's service account: its token, the API
// server's CA and the pod's namespace.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// statefulSetReplicas reads .spec.replicas of the StatefulSet name in the
// pod's namespace from the API server at KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT, with the pod's service account (in dir, or
// serviceAccountDir when dir is "").
func statefulSetReplicas(ctx context.Context, name, dir string, lookupEnv func(string) (string, bool)) (int, error) {
	if dir == "" {
		dir = serviceAccountDir
	}
	host, _ := lookupEnv("KUBERNETES_SERVICE_HOST")
	port, _ := lookupEnv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return 0, errors.New("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: not in a Kubernetes pod")
	}
	read := func(file string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, file))
		return strings.TrimSpace(string(b)), err
	}
	token, err := read("token")
	if err != nil {
		return 0, fmt.Errorf("the pod's service account: %w", err)
	}
	namespace, err := read("namespace")
	if err != nil {
		return 0, fmt.Errorf("the pod's service account: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return 0, fmt.Errorf("the pod's service account: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return 0, fmt.Errorf("the pod's service account: %s holds no certificate", filepath.Join(dir, "ca.crt"))
	}
	url := fmt.Sprintf("https://%s/apis/apps/v1/namespaces/%s/statefulsets/%s", net.JoinHostPort(host, port), namespace, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
	}
	var set struct {
		Spec struct {
			Replicas *int `json:"replicas"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	if set.Spec.Replicas == nil {
		return 1, nil // the API's default
	}
	return *set.Spec.Replicas, nil
}
