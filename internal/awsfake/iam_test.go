package awsfake_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/iampolicy"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// TestPermissionPolicyIsEnforced: a session of the workload role provisioned from the example
// record (its permission policy as spokeforge names derives it) may do what the spoke does on
// the record's own resources, and is refused, as IAM refuses, on another cluster's resources and
// on anything a policy narrowed by one resource no longer names.
func TestPermissionPolicyIsEnforced(t *testing.T) {
	e, errs := repo.LoadCluster("../../examples/gitops/clusters/gpu-east-1", "gpu-east-1")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	n := e.Names
	f := awsfake.New(e.Cluster.Spec.AccountID, e.Cluster.Spec.Region)
	url, err := f.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The record's second secret is not written yet.
	if err := awsfake.ProvisionRecord(f, e.Cluster, n, nil, map[string]bool{n.Secrets[1].Name: true}); err != nil {
		t.Fatal(err)
	}
	// Another cluster's resources in the same account.
	f.PutSecretString("acme-ml/us-east-1/dc-ash1/equinix/gpu-east-9/hf-token", `{"token":"x"}`)
	f.AddQueue("eue9-jobs")
	f.AddRepository("eue9/inference")
	if err := f.AddBucket("eue9-models"); err != nil {
		t.Fatal(err)
	}
	f.StaticKey("ASIAWORKLOAD", n.IAMRoleArn)

	creds := awscreds.NewStaticCredentialsProvider("ASIAWORKLOAD", "secret", "")
	region, ep := e.Cluster.Spec.Region, aws.String(url)
	sm := secretsmanager.New(secretsmanager.Options{Region: region, BaseEndpoint: ep, Credentials: creds, Retryer: aws.NopRetryer{}})
	ecrc := ecr.New(ecr.Options{Region: region, BaseEndpoint: ep, Credentials: creds, Retryer: aws.NopRetryer{}})
	sqsc := sqs.New(sqs.Options{Region: region, BaseEndpoint: ep, Credentials: creds, Retryer: aws.NopRetryer{}})
	s3c := s3.New(s3.Options{Region: region, BaseEndpoint: ep, Credentials: creds, Retryer: aws.NopRetryer{}, UsePathStyle: true})
	ctx := context.Background()

	calls := map[string]func(secret, queue, repository, bucket string) error{
		"secretsmanager:GetSecretValue": func(s, _, _, _ string) error {
			_, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s)})
			return err
		},
		"secretsmanager:DescribeSecret": func(s, _, _, _ string) error {
			_, err := sm.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(s)})
			return err
		},
		"sqs:GetQueueUrl": func(_, q, _, _ string) error {
			_, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q)})
			return err
		},
		"ecr:DescribeRepositories": func(_, _, r, _ string) error {
			_, err := ecrc.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{r}})
			return err
		},
		"s3:ListBucket": func(_, _, _, b string) error {
			_, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)})
			return err
		},
		"s3:PutObject": func(_, _, _, b string) error {
			_, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("models/m.bin"), Body: strings.NewReader("m")})
			return err
		},
	}
	own := []string{n.Secrets[0].Name, n.Queues[0].Name, n.Registries[0].Name, n.Buckets[0].Name}
	foreign := []string{"acme-ml/us-east-1/dc-ash1/equinix/gpu-east-9/hf-token", "eue9-jobs", "eue9/inference", "eue9-models"}
	for action, call := range calls {
		t.Run(action, func(t *testing.T) {
			if err := call(own[0], own[1], own[2], own[3]); err != nil {
				t.Fatalf("on the record's own resource: %v", err)
			}
			err := call(foreign[0], foreign[1], foreign[2], foreign[3])
			if !denied(err) {
				t.Fatalf("on another cluster's resource: %v, want AccessDenied", err)
			}
			if !strings.HasPrefix(action, "s3:") && !strings.Contains(err.Error(), "not authorized to perform: "+action) {
				t.Fatalf("refusal does not name the action: %v", err)
			}
		})
	}
	if _, err := ecrc.GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{}); err != nil {
		t.Fatalf("ecr:GetAuthorizationToken: %v", err)
	}
	// A secret the record names but nobody wrote: the policy lets the call through, and
	// Secrets Manager answers that it is missing; one the record does not name is refused.
	if _, err := sm.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(n.Secrets[1].Name)}); code(err) != "ResourceNotFoundException" {
		t.Fatalf("a named secret not written yet: %v, want ResourceNotFoundException", err)
	}
	if _, err := sm.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(n.SecretPath + "/not-named")}); !denied(err) {
		t.Fatalf("a secret the record does not name: %v, want AccessDenied", err)
	}

	// Narrowed by one resource: the first queue leaves the policy; the second stays usable.
	p := names.Policies(e.Cluster, n).PermissionPolicy
	narrowed := p.WithoutResource("arn:aws:sqs:" + region + ":" + e.Cluster.Spec.AccountID + ":" + n.Queues[0].Name)
	f.PutRolePolicy(n.IAMRoleArn, "spokeforge", narrowed)
	_, err = sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(n.Queues[0].Name)})
	if !denied(err) || !strings.Contains(err.Error(), n.Queues[0].Name) {
		t.Fatalf("queue left out of the policy: %v, want AccessDenied naming it", err)
	}
	if _, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(n.Queues[1].Name)}); err != nil {
		t.Fatalf("queue still in the policy: %v", err)
	}
	// An explicit Deny wins over the Allow.
	f.PutRolePolicy(n.IAMRoleArn, "deny-secrets", iampolicy.Document{Version: iampolicy.Version, Statement: []iampolicy.Statement{{
		Effect: "Deny", Action: iampolicy.Strings{"secretsmanager:*"}, Resource: iampolicy.Strings{"*"}}}})
	if _, err := sm.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(own[0])}); !denied(err) {
		t.Fatalf("explicit deny: %v", err)
	}
}

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func denied(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "AccessDenied", "AccessDeniedException", "Forbidden":
		return true
	}
	return false
}
