package healthchecks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	helper "github.com/aws/rolesanywhere-credential-helper/aws_signing_helper"

	"github.com/spokeforge/spokeforge/internal/credentials"
)

// exchanging admits one Roles Anywhere exchange at a time, process-wide.
// The helper takes no context and its HTTP client has no timeout, so a
// hung endpoint is abandoned rather than waited for; this bounds the
// abandoned exchanges to one however long the endpoint hangs.
var exchanging = make(chan struct{}, 1)

// exchange runs the Roles Anywhere exchange under ctx.
func (r *run) exchange(ctx context.Context) (helper.CredentialProcessOutput, error) {
	sp, id := r.cfg.Spec, r.cfg.Identity
	select {
	case exchanging <- struct{}{}:
	default:
		return helper.CredentialProcessOutput{}, fmt.Errorf("Roles Anywhere CreateSession for role %s: an earlier call has not returned: %w",
			sp.IAMRoleArn, context.DeadlineExceeded)
	}
	type out struct {
		c   helper.CredentialProcessOutput
		err error
	}
	ch := make(chan out, 1)
	go func() {
		defer func() { <-exchanging }()
		c, err := credentials.Exchange(credentials.Options{
			Certificate: id.Certificate, PrivateKey: id.PrivateKey,
			TrustAnchorArn: sp.TrustAnchorArn, ProfileArn: sp.ProfileArn, RoleArn: sp.IAMRoleArn,
			Region: sp.Region, SessionDuration: id.SessionDuration, Endpoint: id.Endpoint,
		})
		ch <- out{c, err}
	}()
	select {
	case o := <-ch:
		return o.c, o.err
	case <-ctx.Done():
		return helper.CredentialProcessOutput{}, fmt.Errorf("Roles Anywhere CreateSession for role %s: %w", sp.IAMRoleArn, ctx.Err())
	}
}

// identity: the certificate buys credentials for the derived role, and STS
// says the caller is that role.
func (r *run) identity(ctx context.Context) Result {
	var b builder
	sp, id := r.cfg.Spec, r.cfg.Identity
	for _, f := range []string{id.Certificate, id.PrivateKey} {
		if _, err := os.Stat(f); err != nil {
			b.finding(Pending, "workload certificate", "PendingCertificate",
				"the workload identity certificate has not been issued yet",
				fmt.Sprintf("workload certificate file %s is not there yet (cert-manager issues %s/%s): %v", f, "spokeforge-system", "workload-identity-tls", errors.Unwrap(err)))
			return b.done("", "")
		}
	}
	var cp helper.CredentialProcessOutput
	attempts, err := r.call(ctx, func(c context.Context) error {
		var err error
		cp, err = r.exchange(c)
		return err
	})
	if err != nil {
		st := classify(err)
		summary := "the workload identity is not valid: Roles Anywhere refused the certificate for role " + sp.IAMRoleArn
		if st == Pending {
			summary = "Roles Anywhere did not answer yet"
		}
		b.errFinding(st, "rolesanywhere:CreateSession", "RolesAnywhereDenied", summary, fmt.Sprintf("%s (after %d attempts)", short(err), attempts))
		return b.done("", "")
	}
	b.pass("rolesanywhere:CreateSession", "session for %s, expires %s", sp.IAMRoleArn, cp.Expiration)
	cfg := r.cfg.AWS.Copy()
	cfg.Region = sp.Region
	cfg.Credentials = aws.NewCredentialsCache(awscreds.NewStaticCredentialsProvider(cp.AccessKeyId, cp.SecretAccessKey, cp.SessionToken))
	client := sts.NewFromConfig(cfg)
	var out *sts.GetCallerIdentityOutput
	attempts, err = r.call(ctx, func(c context.Context) error {
		var err error
		out, err = client.GetCallerIdentity(c, &sts.GetCallerIdentityInput{})
		return err
	})
	if err != nil {
		st := classify(err)
		b.errFinding(st, "sts:GetCallerIdentity", "CallerIdentityFailed", "the workload identity is not valid: STS rejected its credentials",
			fmt.Sprintf("%s (after %d attempts)", short(err), attempts))
		return b.done("", "")
	}
	caller := aws.ToString(out.Arn)
	if want, ok := assumedRoleMatches(caller, sp.IAMRoleArn); !ok {
		b.finding(Failed, "sts:GetCallerIdentity", "WrongRole", "the workload identity is not valid: it assumed the wrong role",
			fmt.Sprintf("caller is %s, want %s", caller, want))
		return b.done("", "")
	}
	b.pass("sts:GetCallerIdentity", "%s", caller)
	r.aws = &cfg
	return b.done("Verified", "caller "+caller+" is the derived role "+sp.IAMRoleArn)
}

// assumedRoleMatches checks an STS caller ARN is
// arn:<partition>:sts::<account>:assumed-role/<role>/<session> for roleArn.
func assumedRoleMatches(caller, roleArn string) (string, bool) {
	want := roleArn
	role, err := arn.Parse(roleArn)
	if err != nil {
		return want, false
	}
	name := role.Resource[strings.LastIndex(role.Resource, "/")+1:]
	want = fmt.Sprintf("arn:%s:sts::%s:assumed-role/%s/<session>", role.Partition, role.AccountID, name)
	c, err := arn.Parse(caller)
	if err != nil || c.Service != "sts" || c.AccountID != role.AccountID || c.Partition != role.Partition {
		return want, false
	}
	parts := strings.Split(c.Resource, "/")
	return want, len(parts) == 3 && parts[0] == "assumed-role" && parts[1] == name && parts[2] != ""
}

// awsSecrets: each derived secret exists and is not scheduled for deletion.
func (r *run) awsSecrets(ctx context.Context, b *builder) {
	if len(r.cfg.Spec.Secrets) == 0 {
		return
	}
	if r.aws == nil {
		b.noCredentials("secretsmanager:DescribeSecret")
		return
	}
	client := secretsmanager.NewFromConfig(*r.aws)
	for _, s := range r.cfg.Spec.Secrets {
		var out *secretsmanager.DescribeSecretOutput
		attempts, err := r.call(ctx, func(c context.Context) error {
			var err error
			out, err = client.DescribeSecret(c, &secretsmanager.DescribeSecretInput{SecretId: aws.String(s.Name)})
			return err
		})
		check := "secretsmanager:DescribeSecret " + s.Name
		switch {
		case err != nil && NotFound(err):
			// The secret files live in git; the sync is what writes them (docs/secrets.md).
			b.finding(Failed, check, "SecretMissing", "the secret "+s.Name+" is missing in Secrets Manager (run spokeforge secrets sync)",
				fmt.Sprintf("Secrets Manager has no secret %s (%s after %d attempts): write it from the gitops repo with spokeforge secrets sync --cluster %s",
					s.Name, errorCode(err), attempts, r.cfg.Spec.Cluster))
		case err != nil && NotAuthorized(err):
			b.denied(check, "secretsmanager:DescribeSecret", s.Name, err)
		case err != nil:
			st := classify(err)
			b.errFinding(st, check, "SecretUnreadable", "the secret "+s.Name+" cannot be read",
				fmt.Sprintf("DescribeSecret %s: %s (after %d attempts)", s.Name, short(err), attempts))
		case out.DeletedDate != nil:
			b.finding(Failed, check, "SecretScheduledForDeletion", "the secret "+s.Name+" is scheduled for deletion",
				fmt.Sprintf("secret %s was marked for deletion at %s; restore it with RestoreSecret", s.Name, out.DeletedDate.UTC().Format(time.RFC3339)))
		default:
			b.pass(check, "%s", aws.ToString(out.ARN))
		}
	}
}

// registry: an ECR token can be had and every derived repository exists.
func (r *run) registry(ctx context.Context) Result {
	var b builder
	sp := r.cfg.Spec
	if len(sp.Registries) == 0 {
		return b.done("NotConfigured", "the record lists no registries")
	}
	if r.aws == nil {
		b.noCredentials("ecr:GetAuthorizationToken")
	} else {
		client := ecr.NewFromConfig(*r.aws)
		var tok *ecr.GetAuthorizationTokenOutput
		attempts, err := r.call(ctx, func(c context.Context) error {
			var err error
			tok, err = client.GetAuthorizationToken(c, &ecr.GetAuthorizationTokenInput{})
			return err
		})
		switch {
		case err != nil && NotAuthorized(err):
			b.denied("ecr:GetAuthorizationToken", "ecr:GetAuthorizationToken", "*", err)
		case err != nil:
			st := classify(err)
			b.errFinding(st, "ecr:GetAuthorizationToken", "RegistryTokenDenied", "the registry refuses a pull token",
				fmt.Sprintf("GetAuthorizationToken: %s (after %d attempts)", short(err), attempts))
		case len(tok.AuthorizationData) == 0:
			b.finding(Failed, "ecr:GetAuthorizationToken", "RegistryTokenEmpty", "the registry returned no pull token", "GetAuthorizationToken returned no authorization data")
		default:
			d := tok.AuthorizationData[0]
			b.pass("ecr:GetAuthorizationToken", "token for %s, expires %s", aws.ToString(d.ProxyEndpoint), aws.ToTime(d.ExpiresAt).UTC().Format(time.RFC3339))
		}
		for _, repo := range sp.Registries {
			var out *ecr.DescribeRepositoriesOutput
			attempts, err := r.call(ctx, func(c context.Context) error {
				var err error
				out, err = client.DescribeRepositories(c, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{repo}})
				return err
			})
			check := "ecr:DescribeRepositories " + repo
			switch {
			case err != nil && NotFound(err):
				b.finding(Failed, check, "RepositoryMissing", "the registry repository "+repo+" has not been provisioned",
					fmt.Sprintf("ECR has no repository %s (%s after %d attempts)", repo, errorCode(err), attempts))
			case err != nil && NotAuthorized(err):
				b.denied(check, "ecr:DescribeRepositories", repo, err)
			case err != nil:
				st := classify(err)
				b.errFinding(st, check, "RepositoryUnreadable", "the registry repository "+repo+" cannot be read",
					fmt.Sprintf("DescribeRepositories %s: %s (after %d attempts)", repo, short(err), attempts))
			case len(out.Repositories) == 0:
				b.finding(Failed, check, "RepositoryMissing", "the registry repository "+repo+" has not been provisioned", "DescribeRepositories returned nothing for "+repo)
			default:
				b.pass(check, "%s", aws.ToString(out.Repositories[0].RepositoryUri))
			}
		}
	}
	for _, ref := range sp.RegistrySecrets {
		r.externalSecret(ctx, &b, ref.Namespace, ref.Name, true)
	}
	return b.done("Verified", fmt.Sprintf("pull token issued; %s reachable", counted(len(sp.Registries), "repository", "repositories")))
}

// queues: every derived queue has a URL and readable attributes.
func (r *run) queues(ctx context.Context) Result {
	var b builder
	sp := r.cfg.Spec
	if len(sp.Queues) == 0 {
		return b.done("NotConfigured", "the record lists no queues")
	}
	if r.aws == nil {
		b.noCredentials("sqs:GetQueueUrl")
		return b.done("", "")
	}
	client := sqs.NewFromConfig(*r.aws)
	for _, q := range sp.Queues {
		var url *sqs.GetQueueUrlOutput
		attempts, err := r.call(ctx, func(c context.Context) error {
			var err error
			url, err = client.GetQueueUrl(c, &sqs.GetQueueUrlInput{QueueName: aws.String(q)})
			return err
		})
		var missing *sqstypes.QueueDoesNotExist
		switch {
		case err != nil && (errors.As(err, &missing) || NotFound(err)):
			b.finding(Failed, "sqs:GetQueueUrl "+q, "QueueMissing", "the queue "+q+" has not been provisioned",
				fmt.Sprintf("queue %s does not exist (%s after %d attempts)", q, errorCode(err), attempts))
			continue
		case err != nil && NotAuthorized(err):
			b.denied("sqs:GetQueueUrl "+q, "sqs:GetQueueUrl", q, err)
			continue
		case err != nil:
			st := classify(err)
			b.errFinding(st, "sqs:GetQueueUrl "+q, "QueueUnreadable", "the queue "+q+" cannot be reached",
				fmt.Sprintf("GetQueueUrl %s: %s (after %d attempts)", q, short(err), attempts))
			continue
		}
		var attrs *sqs.GetQueueAttributesOutput
		attempts, err = r.call(ctx, func(c context.Context) error {
			var err error
			attrs, err = client.GetQueueAttributes(c, &sqs.GetQueueAttributesInput{QueueUrl: url.QueueUrl,
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
			return err
		})
		if err != nil && NotAuthorized(err) {
			b.denied("sqs:GetQueueAttributes "+q, "sqs:GetQueueAttributes", q, err)
			continue
		}
		if err != nil {
			st := classify(err)
			b.errFinding(st, "sqs:GetQueueAttributes "+q, "QueueAttributesDenied", "the queue "+q+" cannot be read",
				fmt.Sprintf("GetQueueAttributes %s: %s (after %d attempts)", q, short(err), attempts))
			continue
		}
		b.pass("sqs:GetQueueAttributes "+q, "%s, %s messages visible", attrs.Attributes["QueueArn"], attrs.Attributes["ApproximateNumberOfMessages"])
	}
	return b.done("Verified", fmt.Sprintf("%s exist and are readable", counted(len(sp.Queues), "queue", "queues")))
}

// buckets: HeadBucket on every derived bucket (needs s3:ListBucket).
func (r *run) buckets(ctx context.Context, b *builder) {
	if len(r.cfg.Spec.Buckets) == 0 {
		return
	}
	if r.aws == nil {
		b.noCredentials("s3:HeadBucket")
		return
	}
	client := s3.NewFromConfig(*r.aws, func(o *s3.Options) { o.UsePathStyle = r.cfg.S3PathStyle })
	for _, bucket := range r.cfg.Spec.Buckets {
		attempts, err := r.call(ctx, func(c context.Context) error {
			_, err := client.HeadBucket(c, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
			return err
		})
		check := "s3:HeadBucket " + bucket
		switch {
		case err == nil:
			b.pass(check, "bucket %s is reachable", bucket)
		case NotFound(err):
			b.finding(Failed, check, "BucketMissing", "the bucket "+bucket+" has not been provisioned",
				fmt.Sprintf("bucket %s does not exist (HTTP 404 after %d attempts)", bucket, attempts))
		case httpStatus(err) == 403:
			b.finding(Failed, check, "BucketDenied", "access to the bucket "+bucket+" is denied",
				fmt.Sprintf("HeadBucket %s: 403, the role lacks s3:ListBucket or the bucket is another account's", bucket))
		default:
			st := classify(err)
			b.errFinding(st, check, "BucketUnreachable", "the bucket "+bucket+" cannot be reached",
				fmt.Sprintf("HeadBucket %s: %s (after %d attempts)", bucket, short(err), attempts))
		}
	}
}
