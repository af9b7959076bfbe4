package main

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func TestProvisionFakeLeavesOutExcept(t *testing.T) {
	f, err := provisionFake("../../../examples/gitops/clusters/gpu-east-1", "", []string{"eue1-jobs"})
	if err != nil {
		t.Fatal(err)
	}
	url, err := f.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.StaticKey("AKIATEST", "arn:aws:iam::111122223333:role/setup")
	c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIATEST", "s", "")})
	if _, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("eue1-results.fifo")}); err != nil {
		t.Fatalf("provisioned queue: %v", err)
	}
	if _, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("eue1-jobs")}); err == nil {
		t.Fatal("eue1-jobs was provisioned despite --except")
	}
	if _, err := provisionFake(t.TempDir(), "", nil); err == nil {
		t.Fatal("a folder without cluster.yaml was accepted")
	}
}
