//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/spokeforge/spokeforge/cmp/render"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// hostileToken closes the JSON string of a config pasted together as text and adds
// execProviderConfig, a command Argo CD's application-controller would run, and insecure.
const hostileToken = `x","execProviderConfig":{"command":"/bin/sh","args":["-c","touch /tmp/spokeforge-pwned"],"apiVersion":"client.authentication.k8s.io/v1beta1"},"tlsClientConfig":{"insecure":true},"bearerToken":"y`

// TestHostileClusterCredential puts hostile credentials into the hub's secret store (the
// stand-in External Secrets, which executes templates with ESO's engine v2 functions) for a
// bearerToken and a clientCertificate record, applies the ExternalSecret the hub render makes
// for each, and reads the cluster Secret it becomes: its keys are name, server and config only
// (the store's other keys stay out), and config parses to exactly the credential type's fields,
// each holding the store's value. Argo CD reads the cluster with TLS verified.
func TestHostileClusterCredential(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{SpokeforgeOptional: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := h.hubExternalSecrets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, typ, server string
		store             map[string]string
		want              map[string]any
	}{
		{"hostile-bearer", "bearerToken", "https://10.255.0.1:6443",
			map[string]string{"caData": "ca\"},\"insecure\":true,\"x\":{\"y\":\"", "bearerToken": hostileToken},
			map[string]any{"bearerToken": hostileToken, "tlsClientConfig": map[string]any{"caData": b64("ca\"},\"insecure\":true,\"x\":{\"y\":\"")}}},
		{"hostile-cert", "clientCertificate", "https://10.255.0.2:6443",
			map[string]string{"caData": "ca", "certData": hostileToken, "keyData": "key\"}}\n{{ .bearerToken }}"},
			map[string]any{"tlsClientConfig": map[string]any{"caData": b64("ca"), "certData": b64(hostileToken), "keyData": b64("key\"}}\n{{ .bearerToken }}")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			record := strings.Replace(addedClusterRecord(tc.name, tc.server), "type: bearerToken", "type: "+tc.typ, 1)
			e, errs := repo.ParseCluster("clusters/"+tc.name+"/cluster.yaml", []byte(record))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			// Keys the templates do not name, which Argo CD would read from a cluster Secret.
			store := map[string]string{"execProviderConfig": `{"command":"/bin/sh"}`, "config": `{"execProviderConfig":{"command":"/bin/sh"}}`, "namespaces": "kube-system", "clusterResources": "true"}
			for k, v := range tc.store {
				store[k] = v
			}
			s.Serve(e.Names.SecretPath+"/"+names.CredentialsSecret(e.Cluster), store)
			objs, err := render.Hub(e, render.Options{ESOVersion: "external-secrets.io/v1", ArgoNamespace: ArgoCDNamespace,
				HubSecretStore: "spokeforge-hub", RepoURL: "https://git.example.com/gitops.git", TargetRevision: "main", SourcePath: "clusters/" + tc.name})
			if err != nil {
				t.Fatal(err)
			}
			applied := false
			for _, o := range objs {
				if o.Boundary == "hub-credentials" {
					if _, err := h.Hub.ApplyObjects(ctx, &unstructured.Unstructured{Object: o.Obj}); err != nil {
						t.Fatal(err)
					}
					applied = true
				}
			}
			if !applied {
				t.Fatal("the hub render made no ExternalSecret")
			}
			secretName := e.Names.ArgoCD.ClusterSecret
			var data map[string][]byte
			for {
				sec, err := h.Hub.Client.CoreV1().Secrets(ArgoCDNamespace).Get(ctx, secretName, metav1.GetOptions{})
				if err == nil {
					data = sec.Data
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("no Secret %s: %v", secretName, err)
				case <-time.After(500 * time.Millisecond):
				}
			}
			var keys []string
			for k := range data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if !reflect.DeepEqual(keys, []string{"config", "name", "server"}) {
				t.Errorf("cluster Secret keys %v, want config, name, server only", keys)
			}
			var config map[string]any
			if err := json.Unmarshal(data["config"], &config); err != nil {
				t.Fatalf("config is not JSON: %v\n%s", err, data["config"])
			}
			if !reflect.DeepEqual(config, tc.want) {
				t.Errorf("config %s\nwant exactly %v", data["config"], tc.want)
			}
			// Argo CD's own reading of the Secret, as argocd-server shows it (which never shows an
			// exec provider; the config above is what the controller parses): TLS verified, and
			// no namespaces or cluster-resources setting from the store's other keys.
			for {
				out, err := h.ArgoCD(ctx, "cluster", "get", tc.server, "-o", "json")
				if err == nil {
					var got struct {
						Namespaces       []string `json:"namespaces"`
						ClusterResources bool     `json:"clusterResources"`
						Config           struct {
							TLSClientConfig struct {
								Insecure bool `json:"insecure"`
							} `json:"tlsClientConfig"`
						} `json:"config"`
					}
					if err := json.Unmarshal([]byte(out), &got); err != nil {
						t.Fatalf("argocd cluster get: %v\n%s", err, out)
					}
					if got.Config.TLSClientConfig.Insecure || len(got.Namespaces) > 0 || got.ClusterResources {
						t.Errorf("Argo CD reads settings the store's values chose:\n%s", out)
					}
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("Argo CD never listed %s: %v", tc.server, err)
				case <-time.After(time.Second):
				}
			}
		})
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
