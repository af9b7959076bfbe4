//go:build !cmponly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/spokeforge/spokeforge/healthchecks"
	"github.com/spokeforge/spokeforge/internal/onboarding"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// awsFlags are the AWS knobs `check` and `agent` share.
type awsFlags struct {
	endpoint, rolesAnywhere, pathStyle string
	callTimeout                        time.Duration
	certificate, privateKey            string
}

func (f *awsFlags) register(fs *pflag.FlagSet, certDefault, keyDefault string) {
	fs.StringVar(&f.endpoint, "aws-endpoint-url", "", "endpoint for every AWS service (default: AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>, else AWS)")
	fs.StringVar(&f.rolesAnywhere, "rolesanywhere-endpoint", "", "Roles Anywhere endpoint (default: AWS_ENDPOINT_URL_ROLESANYWHERE, else --aws-endpoint-url / AWS_ENDPOINT_URL, else regional)")
	fs.StringVar(&f.pathStyle, "s3-path-style", "auto", "address S3 buckets by path: true, false, or auto (true when an S3 endpoint override is set)")
	fs.DurationVar(&f.callTimeout, "call-timeout", 10*time.Second, "timeout of each attempt of each call")
	fs.StringVar(&f.certificate, "certificate", certDefault, "workload certificate (PEM)")
	fs.StringVar(&f.privateKey, "private-key", keyDefault, "its private key (PEM)")
}

// config builds the SDK config: retries are the checks' own (capped
// backoff, classified), so the SDK's retryer is off.
func (f *awsFlags) config(ctx context.Context) (aws.Config, healthchecks.Identity, bool, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }))
	if err != nil {
		return aws.Config{}, healthchecks.Identity{}, false, fmt.Errorf("AWS SDK configuration: %w", err)
	}
	if f.endpoint != "" {
		cfg.BaseEndpoint = aws.String(f.endpoint)
	}
	ra := firstNonEmpty(f.rolesAnywhere, os.Getenv("AWS_ENDPOINT_URL_ROLESANYWHERE"), f.endpoint, os.Getenv("AWS_ENDPOINT_URL"))
	var path bool
	switch f.pathStyle {
	case "true":
		path = true
	case "false":
	case "auto":
		path = f.endpoint != "" || os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != ""
	default:
		return aws.Config{}, healthchecks.Identity{}, false, fmt.Errorf("--s3-path-style %q: want true, false or auto", f.pathStyle)
	}
	return cfg, healthchecks.Identity{Certificate: f.certificate, PrivateKey: f.privateKey, Endpoint: ra}, path, nil
}

func clients(kubeconfig string) (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := kubeConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	return kc, dc, err
}

func checkCmd(stdout, stderr io.Writer) *cobra.Command {
	var af awsFlags
	var kubeconfig, output, identitySecret string
	var timeout time.Duration
	var probe bool
	cmd := &cobra.Command{
		Use:   "check [DIR]",
		Short: "Check a spoke's onboarding contracts in order and name the first failed boundary; exit 0 pass, 3 failure, 4 pending",
		Long: `Check reads DIR/cluster.yaml, derives every name from it, and checks the
spoke (--kubeconfig) and AWS boundary by boundary: identity, secrets,
certificates, registry, queues, storage, workload. It prints each boundary
with its evidence and spells out the first one that does not hold.

The workload certificate comes from --certificate/--private-key, or else is
read from the spoke's Secret --identity-secret (held in a private temporary
folder for the run, then removed). AWS endpoints follow AWS_ENDPOINT_URL and
AWS_ENDPOINT_URL_<SERVICE> unless --aws-endpoint-url is given.

Exit codes: 0 every boundary passed, 3 at least one failed, 4 the rest is
only pending, 1 bad input.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %q: want table or json", output)
			}
			e, errs := repo.LoadCluster(dir, dir)
			if len(errs) > 0 {
				return report(stderr, errs)
			}
			kc, dc, err := clients(kubeconfig)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context(), timeout)
			defer cancel()
			if af.certificate == "" {
				tmp, err := identityFromSecret(ctx, kc, identitySecret)
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				af.certificate, af.privateKey = filepath.Join(tmp, "tls.crt"), filepath.Join(tmp, "tls.key")
			}
			awsCfg, id, path, err := af.config(ctx)
			if err != nil {
				return err
			}
			spec := onboarding.SpecFor(e.Cluster, e.Names)
			rep := healthchecks.Run(ctx, healthchecks.Config{
				Spec: spec, Kube: kc, Dynamic: dc, Identity: id, AWS: awsCfg, S3PathStyle: path,
				CallTimeout: af.callTimeout, ProbePVC: probe,
			})
			var buf bytes.Buffer
			if output == "json" {
				enc := json.NewEncoder(&buf)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				writeCheckTable(&buf, rep)
			}
			if _, err := stdout.Write(buf.Bytes()); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "checked %s in %s\n", rep.Cluster, rep.Duration.Round(time.Millisecond))
			if code := rep.ExitCode(); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	af.register(f, "", "")
	f.StringVar(&kubeconfig, "kubeconfig", "", "the spoke's kubeconfig (default: KUBECONFIG, then in-cluster)")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.StringVar(&identitySecret, "identity-secret", onboarding.SystemNamespace+"/workload-identity-tls", "Secret holding the workload certificate, when --certificate is not given")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "give up on the whole check after this long")
	f.BoolVar(&probe, "probe-pvc", false, "create a probe claim on the StorageClass and wait for it to bind (needs PVC create/delete in "+onboarding.SystemNamespace+")")
	return cmd
}

// identityFromSecret copies the workload certificate Secret into a private
// temporary folder. A missing Secret leaves the folder empty, which the
// identity check reports as a certificate not issued yet.
func identityFromSecret(ctx context.Context, kc kubernetes.Interface, ref string) (string, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return "", fmt.Errorf("--identity-secret %q: want NAMESPACE/NAME", ref)
	}
	tmp, err := os.MkdirTemp("", "spokeforge-identity-")
	if err != nil {
		return "", err
	}
	s, err := kc.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return tmp, nil
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("reading Secret %s: %w", ref, err)
	}
	for _, k := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(tmp, k), s.Data[k], 0o600); err != nil {
			os.RemoveAll(tmp)
			return "", err
		}
	}
	return tmp, nil
}

var stateMark = map[healthchecks.State]string{
	healthchecks.Passed: "ok", healthchecks.Failed: "FAIL", healthchecks.Pending: "wait", healthchecks.NotChecked: "--",
}

func writeCheckTable(w io.Writer, rep healthchecks.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BOUNDARY\tSTATE\tREASON\tMESSAGE")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Boundary, r.State, r.Reason, r.Message)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nEVIDENCE")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rep.Results {
		for _, e := range r.Evidence {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Boundary, stateMark[e.State], e.Check, e.Detail)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	if rep.FirstFailed == "" {
		fmt.Fprintf(w, "%s: %s\n", rep.Cluster, rep.Message)
	} else {
		fmt.Fprintf(w, "%s: first failed boundary %s: %s\n", rep.Cluster, rep.FirstFailed, rep.Message)
	}
	if rep.Connected != nil {
		fmt.Fprintf(w, "connected: Kubernetes %s, %d nodes\n", rep.Connected.KubernetesVersion, rep.Connected.NodeCount)
	}
}
