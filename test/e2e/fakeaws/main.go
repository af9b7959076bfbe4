// Command fakeaws serves local stand-ins for the AWS APIs the onboarding
// checks call (internal/awsfake), for the e2e harness and `make demo`. It is
// a test tool: the shipped spokeforge binary does not contain it.
//
//	fakeaws --addr 127.0.0.1:4566 --provision examples/gitops/clusters/gpu-east-1 [--except eue1-jobs] [--trust-anchor-ca ca.crt]
//
// It prints AWS_ENDPOINT_URL=<url> once it listens and runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4566", "listen address")
	provision := flag.String("provision", "", "cluster record folder: create every resource it derives (the role, secrets, repositories, queues, buckets)")
	except := flag.String("except", "", "comma-separated derived names to leave out of --provision (e.g. eue1-jobs)")
	trust := flag.String("trust-anchor-ca", "", "PEM file of the CA certificates the record's trust anchor holds (default: trust any certificate)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var skip []string
	if *except != "" {
		skip = strings.Split(*except, ",")
	}
	f, err := provisionFake(*provision, *trust, skip)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeaws:", err)
		os.Exit(1)
	}
	url, err := f.Start(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeaws:", err)
		os.Exit(1)
	}
	defer f.Close()
	fmt.Printf("AWS_ENDPOINT_URL=%s\n", url)
	<-ctx.Done()
}
