//go:build !cmponly

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/spf13/cobra"

	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/secrets"
)

func secretsCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Work with the SOPS-encrypted secret files of a gitops repo",
	}
	cmd.AddCommand(secretsSyncCmd(stdout, stderr))
	return cmd
}

func secretsSyncCmd(stdout, stderr io.Writer) *cobra.Command {
	var cluster, output string
	var dryRun bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sync [REPO]",
		Short: "Write each clusters/<cluster>/secrets/<name>.sops.yaml to Secrets Manager at its derived name; exit 0 all synchronised, 2 partial, 3 none",
		Long: `Sync decrypts every secret file of the repo (REPO defaults to the working
directory; --cluster limits it to one cluster) with SOPS (age identities from
SOPS_AGE_KEY_FILE, SOPS_AGE_KEY or the SOPS default key file; AWS KMS through the
AWS SDK's default credential chain) and writes each to AWS Secrets Manager at the
name its record derives (AWS_ENDPOINT_URL and the SDK's configuration apply).

A value already current is not written again, and tags are set only when they
differ. Each secret is handled on its own and reported as created, updated,
unchanged or failed with the reason; secrets the sync wrote that no record
lists any more are reported as orphaned, with the command to delete them by
hand: the sync never deletes. --dry-run reads and compares only, naming the
keys that would change. No value is ever printed (docs/secrets.md).

Exit codes: 0 every secret synchronised, 2 some failed, 3 none synchronised,
1 bad input (flags, records).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			root := "."
			if len(args) == 1 {
				root = args[0]
			}
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %q: want table or json", output)
			}
			ctx, cancel := context.WithTimeout(c.Context(), timeout)
			defer cancel()
			rep, err := secrets.Sync(ctx, secrets.Options{Root: root, Cluster: cluster, DryRun: dryRun,
				Client: func(ctx context.Context, region string) (secrets.API, error) {
					cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
					if err != nil {
						return nil, fmt.Errorf("AWS SDK configuration: %w", err)
					}
					return secretsmanager.NewFromConfig(cfg), nil
				}})
			if err != nil {
				var errs record.Errors
				if errors.As(err, &errs) {
					return report(stderr, errs)
				}
				return err
			}
			var buf bytes.Buffer
			if output == "json" {
				err = rep.WriteJSON(&buf)
			} else {
				err = rep.WriteTable(&buf)
			}
			if err != nil {
				return err
			}
			if _, err := stdout.Write(buf.Bytes()); err != nil {
				return err
			}
			if code := rep.ExitCode(); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cluster, "cluster", "", "sync only clusters/NAME")
	f.BoolVar(&dryRun, "dry-run", false, "read and compare only; name the keys that would change")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "give up on the whole sync after this long")
	return cmd
}
