package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spokeforge/spokeforge/cmp"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// exitError carries an exit code; its message is already printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs the CLI and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "spokeforge",
		Short:         "Onboard GPU Kubernetes spokes to a hub Argo CD from one cluster record",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stderr)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.AddCommand(versionCmd(stdout), renderCmd(stdout, stderr), validateCmd(stdout, stderr), namesCmd(stdout, stderr))
	root.AddCommand(spokeCommands(stdout, stderr)...)
	err := root.Execute()
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintln(stderr, "spokeforge:", err)
		return 1
	}
}

func versionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(stdout, cmp.Version)
			return err
		},
	}
}

// report prints findings to stderr and returns the exit error.
func report(stderr io.Writer, errs record.Errors) error {
	for _, e := range errs {
		fmt.Fprintln(stderr, e.Error())
	}
	fmt.Fprintf(stderr, "%d error(s)\n", len(errs))
	return exitError{1}
}

func validateCmd(stdout, stderr io.Writer) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "validate [REPO]",
		Short: "Check every record of a gitops repo, and the rules across them; exit 1 on any error",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			root := "."
			if len(args) == 1 {
				root = args[0]
			}
			r, errs := cmp.ValidateWithin(root, timeout)
			if len(errs) > 0 {
				return report(stderr, errs)
			}
			zones := 0
			for _, p := range r.Products {
				zones += len(p.Product.Spec.Delivery.Zones)
			}
			_, err := fmt.Fprintf(stdout, "ok: %d clusters, %d orgs, %d products, %d zones\n", len(r.Clusters), len(r.Orgs), len(r.Products), zones)
			return err
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", cmp.ValidateTimeout, "stop rendering clusters after this long (each render is bounded as the CMP's is: "+cmp.RenderTimeout.String()+")")
	return cmd
}

func namesCmd(stdout, stderr io.Writer) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "names [DIR]",
		Short: "Print the names derived from a cluster record (DIR holds cluster.yaml) or from every record of a repo",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			var entries []validate.ClusterEntry
			if _, err := os.Stat(filepath.Join(dir, repo.ClusterFile)); err == nil {
				e, errs := repo.LoadCluster(dir, dir)
				if len(errs) > 0 {
					return report(stderr, errs)
				}
				entries = append(entries, e)
			} else {
				r, errs := repo.Load(dir)
				if len(errs) > 0 {
					return report(stderr, errs)
				}
				entries = r.Clusters
			}
			sort.Slice(entries, func(i, j int) bool { return entries[i].Names.Cluster < entries[j].Names.Cluster })
			var buf bytes.Buffer
			switch output {
			case "json":
				// Each cluster's names and, under "iam", its workload role's IAM documents.
				type clusterJSON struct {
					*names.Names
					IAM names.IAMPolicies `json:"iam"`
				}
				m := map[string]clusterJSON{}
				for _, e := range entries {
					m[e.Names.Cluster] = clusterJSON{Names: e.Names, IAM: names.Policies(e.Cluster, e.Names)}
				}
				enc := json.NewEncoder(&buf)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"clusters": m}); err != nil {
					return err
				}
			case "table":
				all := make([]*names.Names, len(entries))
				for i, e := range entries {
					all[i] = e.Names
				}
				writeNamesTable(&buf, all)
			default:
				return fmt.Errorf("-o %q: want table or json", output)
			}
			_, err := stdout.Write(buf.Bytes())
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}

func writeNamesTable(w io.Writer, all []*names.Names) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tKIND\tNAME")
	for _, n := range all {
		row := func(kind, v string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Cluster, kind, v) }
		row("subject", n.Subject)
		row("subject-uri", n.SubjectURI)
		row("iam-role", n.IAMRoleArn)
		row("secret-path", n.SecretPath)
		for _, c := range n.Secrets {
			row("secret", c.Name)
		}
		for _, c := range n.Queues {
			row("sqs-queue", c.Name)
		}
		for _, c := range n.Buckets {
			row("s3-bucket", c.Name)
		}
		for _, c := range n.Registries {
			row("ecr-repository", c.Name)
		}
		row("argocd-app-of-apps", n.ArgoCD.AppOfApps)
		row("argocd-cluster-secret", n.ArgoCD.ClusterSecret)
		row("argocd-spoke-app", n.ArgoCD.SpokeApp)
	}
	tw.Flush()
}

func renderCmd(stdout, stderr io.Writer) *cobra.Command {
	var mode string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "render [DIR]",
		Short: "Render manifests from a cluster record (the CMP's generate command)",
		Long: `Render reads DIR/cluster.yaml (DIR defaults to the working directory, as Argo CD
runs it) and prints a YAML stream: the spoke's objects (mode spoke), the hub's
objects for that cluster (mode hub), or, with DIR a repo root, one AppProject per
org (mode projects). The mode comes from --mode, else the plugin parameter "mode".
On any error nothing is printed on stdout and the exit code is 1.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			// A render lives for tens of milliseconds and allocates ~10 MB over a live heap of
			// 1-2 MB: with the default GOGC=100 it collects five times on the way. GOGC=400
			// takes ~5 ms (a fifth) off each render for ~6 MB more peak RSS
			// (docs/benchmarks.md). A GOGC in the environment still wins.
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(400)
			}
			out, err := cmp.Within(timeout, "the render", func() ([]byte, error) { return cmp.Generate(dir, mode, os.Getenv) })
			if err != nil {
				var errs record.Errors
				if errors.As(err, &errs) {
					return report(stderr, errs)
				}
				var te *cmp.TimeoutError
				if errors.As(err, &te) {
					return fmt.Errorf("%v; nothing was printed", err)
				}
				return err
			}
			_, err = stdout.Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&mode, "mode", "", "spoke, hub or projects (default: the plugin parameter, else spoke)")
	cmd.Flags().DurationVar(&timeout, "timeout", cmp.RenderTimeout, "stop a render that takes longer, printing nothing")
	return cmd
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
