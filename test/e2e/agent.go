//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/onboarding"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// AgentServiceAccount is the identity the rendered agent Deployment runs as.
const AgentServiceAccount = "system:serviceaccount:spokeforge-system:spokeforge-agent"

// SpokeAgent is the spokeforge agent of a synced spoke, run as a process the way the spoke's
// kubelet would run the agent Deployment, against the spoke's fake AWS account.
type SpokeAgent struct {
	AWSURL      string   // the fake AWS endpoint (AWS_ENDPOINT_URL)
	AWSEnv      []string // the environment the agent and spokeforge check use
	MetricsAddr string
	Agent       *Process
}

// Spoke is everything a working spoke for one cluster record has around what spokeforge
// renders: the AWS account the record derives (internal/awsfake, in this process, so a test can
// break and fix it), cert-manager and External Secrets Operator (SpokeControllers), the
// stand-in Deployment controller (no kubelet runs here), and the GPU nodes of the record
// registered as the kubelet, the NVIDIA device plugin and NFD would.
type Spoke struct {
	*SpokeControllers
	Cluster  string
	AWS      *awsfake.Server
	AWSURL   string
	AWSEnv   []string
	StandIns *StandInControllers
	h        *Hub
}

// SpokeOptions configure StartSpoke.
type SpokeOptions struct {
	// Except lists derived names the AWS account leaves out (e.g. a queue).
	Except []string
	// ApproveManually: see SpokeControllerOptions.
	ApproveManually bool
	// AWS is an account the test started already; StartSpoke provisions the record into it.
	AWS *awsfake.Server
	// Cluster is the spoke's API server; default the hub's spoke (Hub.Spoke), else one
	// StartCluster started.
	Cluster *Cluster
}

// StartSpoke readies the spoke for the cluster record in recordDir before its Application
// syncs: the AWS account holds everything the record derives (with the platform CA as the
// record's trust anchor and the role's trust-policy conditions on the certificate subject), and
// the controllers run.
func (h *Hub) StartSpoke(ctx context.Context, recordDir string, o SpokeOptions) (*Spoke, error) {
	if h.Spokeforge == "" {
		return nil, fmt.Errorf("spokeforge binary not built (see %s)", filepath.Join(h.LogDir, "build-spokeforge.log"))
	}
	e, errs := repo.LoadCluster(recordDir, recordDir)
	if len(errs) > 0 {
		return nil, errs
	}
	spec := e.Cluster.Spec
	fake, url := o.AWS, ""
	if fake != nil {
		url = fake.URL()
	} else {
		fake = awsfake.New(spec.AccountID, spec.Region)
		var err error
		if url, err = fake.Start("127.0.0.1:0"); err != nil {
			return nil, err
		}
		h.onStop(func() { _ = fake.Close() })
	}
	sc, err := h.StartSpokeControllers(ctx, SpokeControllerOptions{AWSURL: url, ApproveManually: o.ApproveManually, Cluster: o.Cluster})
	if err != nil {
		return nil, err
	}
	skip := map[string]bool{}
	for _, x := range o.Except {
		skip[x] = true
	}
	if err := awsfake.ProvisionRecord(fake, e.Cluster, e.Names, []*x509.Certificate{sc.CA}, skip); err != nil {
		return nil, err
	}
	for _, g := range onboarding.SpecFor(e.Cluster, e.Names).GPUNodes {
		if err := registerNode(ctx, sc.c, g.Node, g.Product, g.Count, g.MIGStrategy); err != nil {
			return nil, err
		}
	}
	return &Spoke{SpokeControllers: sc, Cluster: e.Cluster.Metadata.Name, AWS: fake, AWSURL: url,
		AWSEnv: fakeAWSEnv(url, spec.Region), StandIns: StartStandInControllers(ctx, sc.c, "Deployment"), h: h}, nil
}

// StartAgent runs `spokeforge agent` once the spoke Application delivered the Onboarding, with
// the workload certificate cert-manager issued and exactly the rendered agent RBAC (it
// impersonates the agent's ServiceAccount).
func (s *Spoke) StartAgent(ctx context.Context, interval time.Duration) (*SpokeAgent, error) {
	if _, err := s.c.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", s.Cluster); err != nil {
		return nil, fmt.Errorf("Onboarding %s on the spoke (sync the spoke Application first): %w", s.Cluster, err)
	}
	crt, key, err := s.IdentityFiles(ctx)
	if err != nil {
		return nil, err
	}
	sa := &SpokeAgent{AWSURL: s.AWSURL, AWSEnv: s.AWSEnv}
	sa.Agent, sa.MetricsAddr, err = s.h.runAgent(ctx, s.c, s.Cluster, interval, crt, key, sa.AWSEnv)
	return sa, err
}

// fakeAWSEnv points the AWS SDK at the fake endpoint and away from any configuration of this
// machine.
func fakeAWSEnv(url, region string) []string {
	return []string{"AWS_ENDPOINT_URL=" + url, "AWS_REGION=" + region, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
}

// runAgent starts `spokeforge agent` on spoke c for the Onboarding cluster with exactly the
// rendered agent RBAC (it impersonates the agent's ServiceAccount) and waits for its metrics
// endpoint.
func (h *Hub) runAgent(ctx context.Context, c *Cluster, cluster string, interval time.Duration, crt, key string, env []string) (*Process, string, error) {
	kubeconfig, err := impersonatingKubeconfigAt(c, AgentServiceAccount, filepath.Join(h.Dir, h.scoped(c, "agent")+".kubeconfig"))
	if err != nil {
		return nil, "", err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	p, err := h.run(procSpec{name: h.scoped(c, "spokeforge-agent"), path: h.Spokeforge, args: []string{
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

// impersonatingKubeconfigAt writes, as file, a copy of spoke c's kubeconfig that acts as user.
func impersonatingKubeconfigAt(c *Cluster, user, file string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = user
	}
	return file, clientcmd.WriteToFile(*cfg, file)
}
