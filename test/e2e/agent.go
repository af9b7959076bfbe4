//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokeforge/spokeforge/healthchecks/agent"
)

// AgentServiceAccount is the identity the rendered agent Deployment runs as.
const AgentServiceAccount = "system:serviceaccount:spokeforge-system:spokeforge-agent"

// SpokeAgent is the spokeforge agent of a synced spoke, run as a process the way the spoke's
// kubelet would run the agent Deployment, against a fake AWS account.
type SpokeAgent struct {
	AWSURL      string   // the fake-aws endpoint (AWS_ENDPOINT_URL)
	AWSEnv      []string // the environment the agent and spokeforge check use
	MetricsAddr string
	Agent       *Process
}

// StartSpokeAgent plays the rest of a working spoke for the Onboarding cluster, once the spoke
// Application delivered it: `fakeaws --provision recordDir` (test/e2e/fakeaws) as the AWS account
// (everything the record derives exists, except the names in except), the GPU nodes of the
// Onboarding spec registered as the kubelet, NVIDIA device plugin and NFD would, a
// workload-identity certificate, and `spokeforge agent` with exactly the rendered agent RBAC
// (it impersonates the agent's ServiceAccount).
func (h *Hub) StartSpokeAgent(ctx context.Context, cluster, recordDir string, interval time.Duration, except ...string) (*SpokeAgent, error) {
	if h.Spokeforge == "" {
		return nil, fmt.Errorf("spokeforge binary not built (see %s)", filepath.Join(h.LogDir, "build-spokeforge.log"))
	}
	awsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"--addr", awsAddr, "--provision", recordDir}
	if len(except) > 0 {
		args = append(args, "--except", strings.Join(except, ","))
	}
	fake, err := h.run(procSpec{name: "fake-aws", path: h.FakeAWS, args: args})
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, fake, "listening on "+awsAddr, 30*time.Second, tcpCheck(awsAddr)); err != nil {
		return nil, err
	}
	sa := &SpokeAgent{AWSURL: "http://" + awsAddr}

	ob, err := h.Spoke.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", cluster)
	if err != nil {
		return nil, fmt.Errorf("Onboarding %s on the spoke (sync the spoke Application first): %w", cluster, err)
	}
	spec, err := agent.DecodeSpec(ob.Object["spec"])
	if err != nil {
		return nil, fmt.Errorf("Onboarding %s spec: %w", cluster, err)
	}
	sa.AWSEnv = fakeAWSEnv(sa.AWSURL, spec.Region)
	for _, g := range spec.GPUNodes {
		if err := registerNode(ctx, h.Spoke, g.Node, g.Product, g.Count, g.MIGStrategy); err != nil {
			return nil, err
		}
	}
	crt, key, err := writeWorkloadCert(h.Dir, cluster, spec.AccountID)
	if err != nil {
		return nil, err
	}
	sa.Agent, sa.MetricsAddr, err = h.runAgent(ctx, cluster, interval, crt, key, sa.AWSEnv)
	return sa, err
}

// fakeAWSEnv points the AWS SDK at the fake endpoint and away from any configuration of this
// machine.
func fakeAWSEnv(url, region string) []string {
	return []string{"AWS_ENDPOINT_URL=" + url, "AWS_REGION=" + region, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
}

// runAgent starts `spokeforge agent` for the Onboarding cluster with exactly the rendered agent
// RBAC (it impersonates the agent's ServiceAccount) and waits for its metrics endpoint.
func (h *Hub) runAgent(ctx context.Context, cluster string, interval time.Duration, crt, key string, env []string) (*Process, string, error) {
	kubeconfig, err := impersonatingKubeconfig(h, AgentServiceAccount)
	if err != nil {
		return nil, "", err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	p, err := h.run(procSpec{name: "spokeforge-agent", path: h.Spokeforge, args: []string{
		"agent", "--onboarding=" + cluster, "--interval=" + interval.String(), "--debounce=500ms", "--call-timeout=1s",
		"--kubeconfig", kubeconfig, "--certificate", crt, "--private-key", key, "--metrics-addr", metricsAddr,
	}, env: env})
	if err != nil {
		return nil, "", err
	}
	return p, metricsAddr, waitFor(ctx, p, "/metrics on "+metricsAddr, 30*time.Second, httpOK("http://"+metricsAddr+"/metrics"))
}

// registerNode plays the kubelet, the NVIDIA device plugin and NFD for one GPU node of the
// record: the Node with its allocatable GPUs and the labels the rendered NodeFeatureRule applies.
func registerNode(ctx context.Context, c *Cluster, name, product string, count int, mig string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"spokeforge.io/gpu.product": product, "spokeforge.io/gpu.count": strconv.Itoa(count),
		"spokeforge.io/gpu.mig-strategy": mig, "nvidia.com/gpu.product": product}}}
	created, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", name, err)
	}
	gpus := resource.MustParse(strconv.Itoa(count))
	created.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": gpus, corev1.ResourceCPU: resource.MustParse("64")}
	created.Status.Capacity = created.Status.Allocatable
	if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", name, err)
	}
	return nil
}

// impersonatingKubeconfig writes a copy of the spoke kubeconfig that acts as user.
func impersonatingKubeconfig(h *Hub, user string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(h.Spoke.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = user
	}
	path := filepath.Join(h.Dir, "agent.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// writeWorkloadCert writes a self-signed client certificate and key, standing in for the
// workload-identity certificate cert-manager issues on the spoke.
func writeWorkloadCert(dir, cn, org string) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(0x7e2e), Subject: pkix.Name{CommonName: cn, Organization: []string{org}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	crt, k := filepath.Join(dir, "identity.crt"), filepath.Join(dir, "identity.key")
	if err := writePEM(crt, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	if err := writePEM(k, "PRIVATE KEY", kder); err != nil {
		return "", "", err
	}
	return crt, k, nil
}
