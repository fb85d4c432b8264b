package main

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pod reads how many nodes its StatefulSet should have from the API
// server, with its service account's token, trusting only the service
// account's CA, for its own StatefulSet in its own namespace.
func TestStatefulSetReplicas(t *testing.T) {
	var asked string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.Path
		switch {
		case r.Header.Get("Authorization") != "Bearer the-token":
			http.Error(w, `{"reason":"Unauthorized"}`, http.StatusUnauthorized)
		case r.URL.Path == "/apis/apps/v1/namespaces/rate/statefulsets/rl":
			w.Write([]byte(`{"kind":"StatefulSet","spec":{"replicas":3,"serviceName":"rl-headless"}}`))
		default:
			http.Error(w, `{"reason":"NotFound"}`, http.StatusNotFound)
		}
	}))
	defer api.Close()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("token", "the-token\n")
	write("namespace", "rate")
	write("ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})))
	host, port, _ := net.SplitHostPort(api.Listener.Addr().String())
	env := func(k string) (string, bool) {
		v := map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}[k]
		return v, v != ""
	}
	if n, err := statefulSetReplicas(context.Background(), "rl", dir, env); err != nil || n != 3 {
		t.Fatalf("replicas: %d, %v; want 3 (asked %s)", n, err, asked)
	}
	if _, err := statefulSetReplicas(context.Background(), "other", dir, env); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("another StatefulSet: %v, want the API server's 404", err)
	}
	write("token", "a-stolen-token")
	if _, err := statefulSetReplicas(context.Background(), "rl", dir, env); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong token: %v, want the API server's 401", err)
	}
	if _, err := statefulSetReplicas(context.Background(), "rl", dir, func(string) (string, bool) { return "", false }); err == nil {
		t.Error("outside a pod: no error")
	}
}
