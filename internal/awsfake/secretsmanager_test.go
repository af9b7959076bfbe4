package awsfake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"
)

// The calls `spokeforge secrets sync` makes, through the real SDK client,
// answer as the Secrets Manager API reference says.
func TestSecretsManagerFollowsTheAPIReference(t *testing.T) {
	f := New("111122223333", "us-east-1")
	url, err := f.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.StaticKey("AKIATEST", "arn:aws:iam::111122223333:role/setup")
	c := sm.New(sm.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIATEST", "s", "")})
	ctx := context.Background()
	id := aws.String("a/b/c")
	tok1, tok2 := "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"

	_, err = c.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: id})
	var nf *smtypes.ResourceNotFoundException
	if !errors.As(err, &nf) || nf.ErrorMessage() != "Secrets Manager can't find the specified secret." {
		t.Fatalf("missing secret: %v", err)
	}
	f.SetSecretsConsistencyWindow(200 * time.Millisecond)
	if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: id, Tags: []smtypes.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}); err != nil {
		t.Fatal(err)
	}
	var exists *smtypes.ResourceExistsException
	if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: id}); !errors.As(err, &exists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: id, SecretString: aws.String("v1"), ClientRequestToken: aws.String(tok1)}); !errors.As(err, &nf) {
		t.Fatalf("inside the consistency window: %v", err)
	}
	time.Sleep(250 * time.Millisecond)
	_, err = c.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: id})
	if !errors.As(err, &nf) || nf.ErrorMessage() != "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT" {
		t.Fatalf("a secret without a value: %v", err)
	}
	for range 2 { // the same token and value twice: one version
		if out, err := c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: id, SecretString: aws.String("v1"), ClientRequestToken: aws.String(tok1)}); err != nil || aws.ToString(out.VersionId) != tok1 {
			t.Fatalf("put v1: %v", err)
		}
	}
	if _, err := c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: id, SecretString: aws.String("other"), ClientRequestToken: aws.String(tok1)}); !errors.As(err, &exists) {
		t.Fatalf("the same token, another value: %v", err)
	}
	if _, err := c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: id, SecretString: aws.String("v2"), ClientRequestToken: aws.String(tok2)}); err != nil {
		t.Fatal(err)
	}
	d, err := c.DescribeSecret(ctx, &sm.DescribeSecretInput{SecretId: id})
	if err != nil || d.VersionIdsToStages[tok1][0] != "AWSPREVIOUS" || d.VersionIdsToStages[tok2][0] != "AWSCURRENT" || len(d.Tags) != 1 {
		t.Fatalf("stages %v tags %v: %v", d.VersionIdsToStages, d.Tags, err)
	}
	if _, err := c.TagResource(ctx, &sm.TagResourceInput{SecretId: id, Tags: []smtypes.Tag{{Key: aws.String("k"), Value: aws.String("w")}, {Key: aws.String("x"), Value: aws.String("y")}}}); err != nil {
		t.Fatal(err)
	}
	l, err := c.ListSecrets(ctx, &sm.ListSecretsInput{Filters: []smtypes.Filter{{Key: smtypes.FilterNameStringTypeTagKey, Values: []string{"x"}}}})
	if err != nil || len(l.SecretList) != 1 || len(l.SecretList[0].Tags) != 2 || aws.ToString(l.SecretList[0].Tags[0].Value) != "w" {
		t.Fatalf("list: %+v %v", l, err)
	}
	if l, err := c.ListSecrets(ctx, &sm.ListSecretsInput{Filters: []smtypes.Filter{{Key: smtypes.FilterNameStringTypeName, Values: []string{"!a/"}}}}); err != nil || len(l.SecretList) != 0 {
		t.Fatalf("negated name filter: %+v %v", l, err)
	}
	var inv *smtypes.InvalidParameterException
	if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String("bad name")}); !errors.As(err, &inv) {
		t.Fatalf("bad name: %v", err)
	}
	var api smithy.APIError
	if _, err := c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: id, SecretString: aws.String("v"), ClientRequestToken: aws.String("short")}); !errors.As(err, &api) || api.ErrorCode() != "ValidationException" {
		t.Fatalf("short token: %v", err)
	}
	if _, err := c.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: id}); err != nil {
		t.Fatal(err)
	}
	var ir *smtypes.InvalidRequestException
	if _, err := c.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: id}); !errors.As(err, &ir) {
		t.Fatalf("marked for deletion: %v", err)
	}
}
