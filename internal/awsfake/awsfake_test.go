package awsfake

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

func clients(t *testing.T, f *Server, akid string) (*sts.Client, *sqs.Client) {
	t.Helper()
	creds := credentials.NewStaticCredentialsProvider(akid, "secret", "")
	return sts.New(sts.Options{Region: "us-east-1", BaseEndpoint: aws.String(f.URL()), Credentials: creds, Retryer: aws.NopRetryer{}}),
		sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(f.URL()), Credentials: creds, Retryer: aws.NopRetryer{}})
}

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// Keys the fake did not issue are refused: a check that passes against it
// used credentials it handed out.
func TestUnknownKeysAreRefused(t *testing.T) {
	f := New("111122223333", "us-east-1")
	if _, err := f.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stsc, sqsc := clients(t, f, "AKIAUNKNOWN")
	ctx := context.Background()
	if _, err := stsc.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); code(err) != "InvalidClientTokenId" {
		t.Fatalf("STS with an unknown key: %v", err)
	}
	if _, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("q")}); code(err) != "UnrecognizedClientException" {
		t.Fatalf("SQS with an unknown key: %v", err)
	}
}

func TestSQSAndSTSSpeakTheSDKProtocols(t *testing.T) {
	f := New("111122223333", "us-east-1")
	if _, err := f.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.StaticKey("AKIATEST", "arn:aws:iam::111122223333:role/setup")
	stsc, sqsc := clients(t, f, "AKIATEST")
	ctx := context.Background()
	id, err := stsc.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil || aws.ToString(id.Arn) != "arn:aws:sts::111122223333:assumed-role/setup/static" || aws.ToString(id.Account) != "111122223333" {
		t.Fatalf("GetCallerIdentity = %+v, %v", id, err)
	}
	_, err = sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs")})
	var missing *sqstypes.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("missing queue: %v", err)
	}
	if _, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs.fifo")}); err != nil {
		t.Fatal(err)
	}
	u, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs.fifo")})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil || attrs.Attributes["QueueArn"] != "arn:aws:sqs:us-east-1:111122223333:jobs.fifo" || attrs.Attributes["FifoQueue"] != "true" {
		t.Fatalf("attributes = %v, %v", attrs, err)
	}
	f.Inject("sqs.GetQueueUrl", Fault{Times: 1, Status: 400, Code: "ThrottlingException", Message: "slow down"})
	if _, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs.fifo")}); code(err) != "ThrottlingException" {
		t.Fatalf("injected fault: %v", err)
	}
	if _, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs.fifo")}); err != nil {
		t.Fatalf("after the fault: %v", err)
	}
	if f.Calls("sqs.GetQueueUrl") != 4 {
		t.Fatalf("calls = %d", f.Calls("sqs.GetQueueUrl"))
	}
}
