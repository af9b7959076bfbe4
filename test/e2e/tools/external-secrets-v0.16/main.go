// Command external-secrets runs External Secrets Operator v0.16.2's controller (its own
// cmd/controller root command) for the end-to-end suite's spoke, with one addition: v0.16.2's ECR
// generator has no endpoint setting (AWS SDK v1 resolves api.ecr.<region>.amazonaws.com, and ESO's
// endpoint resolver knows only AWS_SECRETSMANAGER_ENDPOINT, AWS_SSM_ENDPOINT and AWS_STS_ENDPOINT),
// so AWS_ECR_ENDPOINT, the variable v0.18 added for it, sends those requests to the fake AWS
// account through http.DefaultClient, which SDK v1 uses when ESO sets no client.
//
// The build (hack/e2e/install.sh) links only the AWS provider and the ECR generator: the two
// register packages of a copy of the module are replaced by the files under ./patch.
package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/external-secrets/external-secrets/cmd/controller"
)

func main() {
	if v := os.Getenv("AWS_ECR_ENDPOINT"); v != "" {
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			fmt.Fprintf(os.Stderr, "AWS_ECR_ENDPOINT %q is not a URL\n", v)
			os.Exit(2)
		}
		http.DefaultClient.Transport = ecrEndpoint{to: u, next: http.DefaultTransport}
	}
	controller.Execute()
}

// ecrEndpoint sends requests for api.ecr.*.amazonaws.com to another endpoint, keeping the Host
// header the request was signed with.
type ecrEndpoint struct {
	to   *url.URL
	next http.RoundTripper
}

func (e ecrEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	if h := r.URL.Hostname(); strings.HasPrefix(h, "api.ecr.") && strings.HasSuffix(h, ".amazonaws.com") {
		r = r.Clone(r.Context())
		r.Host = r.URL.Host
		r.URL.Scheme, r.URL.Host = e.to.Scheme, e.to.Host
	}
	return e.next.RoundTrip(r)
}
