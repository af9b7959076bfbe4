//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fieldManager is the server-side apply field manager of the harness.
const fieldManager = "spokeforge-e2e"

// Cluster is one kube-apiserver of the harness with clients for its admin user (a static
// token in group system:masters).
type Cluster struct {
	Name string // "hub" or "spoke"
	// URL is https://127.0.0.1:PORT.
	URL string
	// Token is the bearer token of the admin user (group system:masters).
	Token string
	// CAData is the PEM of the self-signed serving certificate: the CA to trust.
	CAData []byte
	// Kubeconfig is the path of a kubeconfig for the admin user.
	Kubeconfig string

	Config    *rest.Config
	Client    kubernetes.Interface
	Dynamic   dynamic.Interface
	Process   *Process
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	dir       string
	port      int
	etcdURL   string
	etcdPrefx string
}

// argoCDConfig is the config of an Argo CD cluster Secret for c: its admin token and CA.
func (c *Cluster) argoCDConfig() ([]byte, error) {
	return json.Marshal(map[string]any{
		"bearerToken":     c.Token,
		"tlsClientConfig": map[string]any{"insecure": false, "caData": base64.StdEncoding.EncodeToString(c.CAData)},
	})
}

// writePEM writes PEM blocks to path.
func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// selfSignedCert writes a self-signed ECDSA serving certificate for 127.0.0.1 and localhost to
// certPath/keyPath and returns the certificate PEM.
func selfSignedCert(cn, certPath, keyPath string) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if err := writePEM(keyPath, "PRIVATE KEY", keyDER); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// serviceAccountKeys writes an RSA key pair for service-account tokens.
func serviceAccountKeys(privPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(privPath, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)); err != nil {
		return err
	}
	return writePEM(pubPath, "PUBLIC KEY", pub)
}

// randomToken returns a random hex token.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// startAPIServer prepares certificates, keys and the token file of c and starts kube-apiserver.
func (h *Hub) startAPIServer(ctx context.Context, c *Cluster) error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	certPath, keyPath := filepath.Join(c.dir, "serving.crt"), filepath.Join(c.dir, "serving.key")
	ca, err := selfSignedCert(c.Name+"-apiserver", certPath, keyPath)
	if err != nil {
		return fmt.Errorf("%s apiserver: serving certificate: %w", c.Name, err)
	}
	c.CAData = ca
	saKey, saPub := filepath.Join(c.dir, "sa.key"), filepath.Join(c.dir, "sa.pub")
	if err := serviceAccountKeys(saKey, saPub); err != nil {
		return fmt.Errorf("%s apiserver: service-account keys: %w", c.Name, err)
	}
	c.Token = randomToken()
	tokens := filepath.Join(c.dir, "tokens.csv")
	// token,user,uid,"group1,group2"
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("%s,admin,admin,\"system:masters\"\n", c.Token)), 0o600); err != nil {
		return err
	}
	c.URL = fmt.Sprintf("https://127.0.0.1:%d", c.port)
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--etcd-prefix=" + c.etcdPrefx,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// v1.37 refuses a loopback advertise address to its endpoint reconciler; nothing here reads
		// the kubernetes Service's endpoints.
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", c.port),
		"--tls-cert-file=" + certPath,
		"--tls-private-key-file=" + keyPath,
		"--cert-dir=" + filepath.Join(c.dir, "certs"),
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// No kube-controller-manager runs: pods never get created, so the admission plugins
		// that need controllers are pointless.
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}
	// Through h.run, so Stop ends it with the hub (before etcd) instead of at the end of the run.
	p, err := h.run(procSpec{name: "kube-apiserver-" + c.Name, path: h.bin("kube-apiserver"), args: args})
	if err != nil {
		return err
	}
	c.Process = p
	c.Config = &rest.Config{
		Host:            c.URL,
		BearerToken:     c.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
		QPS:             100,
		Burst:           200,
		Timeout:         60 * time.Second,
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.Config); err != nil {
		return err
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Name, c.URL, c.CAData, c.Token, ""); err != nil {
		return err
	}
	return waitFor(ctx, p, "/readyz", 4*time.Minute, func(ctx context.Context) error {
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%v %s", err, body)
		}
		return nil
	})
}

// writeKubeconfig writes a kubeconfig with one context named name.
func writeKubeconfig(path, name, server string, ca []byte, token, namespace string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

// DecodeYAML splits a multi-document YAML (or JSON) stream into objects, skipping empty
// documents and expanding List kinds.
func DecodeYAML(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return out, err
			}
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			continue
		}
		out = append(out, u)
	}
}

// resourceFor maps obj to its resource, refreshing discovery once when the kind is unknown
// (a CRD applied a moment ago).
func (c *Cluster) resourceFor(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: no resource for %s: %w", c.Name, gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "default"
			obj.SetNamespace(ns)
		}
		return c.Dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// Apply server-side applies every object of the YAML stream (force, field manager
// spokeforge-e2e) and returns them as the server stored them.
func (c *Cluster) Apply(ctx context.Context, manifest string) ([]*unstructured.Unstructured, error) {
	objs, err := DecodeYAML(strings.NewReader(manifest))
	if err != nil {
		return nil, fmt.Errorf("%s: decode: %w", c.Name, err)
	}
	return c.ApplyObjects(ctx, objs...)
}

// ApplyObjects server-side applies objs, in order.
func (c *Cluster) ApplyObjects(ctx context.Context, objs ...*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	return c.applyAs(ctx, fieldManager, objs...)
}

// ApplyAs server-side applies the YAML stream as field manager manager: fields it sets join
// those of other managers instead of replacing them (a strategic-merge patch, the SSA way).
func (c *Cluster) ApplyAs(ctx context.Context, manager, manifest string) error {
	objs, err := DecodeYAML(strings.NewReader(manifest))
	if err != nil {
		return fmt.Errorf("%s: decode: %w", c.Name, err)
	}
	_, err = c.applyAs(ctx, manager, objs...)
	return err
}

func (c *Cluster) applyAs(ctx context.Context, manager string, objs ...*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		var got *unstructured.Unstructured
		// An API server that just turned ready, or one on a loaded machine, can answer a
		// request with a transient error (a group not yet in discovery, a timeout, 429/5xx):
		// those are retried for a minute; any other error is the answer.
		deadline := time.Now().Add(time.Minute)
		for {
			ri, err := c.resourceFor(obj)
			if err == nil {
				got, err = ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: manager, Force: true})
				if err != nil {
					err = fmt.Errorf("%s: apply %s %s/%s: %w", c.Name, obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
				}
			}
			if err == nil {
				break
			}
			if !transientAPIError(err) || time.Now().After(deadline) || ctx.Err() != nil {
				return out, err
			}
			if meta.IsNoMatchError(err) {
				c.mapper.Reset()
			}
			time.Sleep(time.Second)
		}
		out = append(out, got)
	}
	return out, nil
}

// transientAPIError reports whether err is one an API server gives while it starts or is
// overloaded, and a retry can succeed.
func transientAPIError(err error) bool {
	if meta.IsNoMatchError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "connection reset") ||
		strings.Contains(msg, "EOF") || strings.Contains(msg, "etcdserver")
}

// ApplyFiles applies the YAML files at paths and waits for the CRDs among them to be
// Established.
func (c *Cluster) ApplyFiles(ctx context.Context, paths ...string) error {
	var crds []string
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		objs, err := DecodeYAML(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%s: decode %s: %w", c.Name, path, err)
		}
		applied, err := c.ApplyObjects(ctx, objs...)
		if err != nil {
			return fmt.Errorf("%s (from %s)", err, path)
		}
		for _, o := range applied {
			if o.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, o.GetName())
			}
		}
	}
	return c.WaitCRDsEstablished(ctx, crds...)
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// WaitCRDsEstablished waits until every named CRD has condition Established=True, then resets
// the discovery cache.
func (c *Cluster) WaitCRDsEstablished(ctx context.Context, names ...string) error {
	for _, name := range names {
		err := waitFor(ctx, c.Process, "CRD "+name+" Established", 3*time.Minute, func(ctx context.Context) error {
			u, err := c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
			return errors.New("not Established yet")
		})
		if err != nil {
			return err
		}
	}
	c.mapper.Reset()
	return nil
}

// Get returns the object of kind apiVersion/kind named namespace/name.
func (c *Cluster) Get(ctx context.Context, apiVersion, kind, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	ri, err := c.resourceFor(u)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, name, metav1.GetOptions{})
}

// ensureNamespace creates namespace ns unless it exists.
func (c *Cluster) ensureNamespace(ctx context.Context, ns string) error {
	_, err := c.Apply(ctx, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
