package generator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// ArgoCDState is what the inventory reads of Argo CD: its view of every
// cluster's connection, and a spoke's Onboarding as Argo CD reads it live.
type ArgoCDState interface {
	Clusters(ctx context.Context) ([]ClusterConnection, error)
	// Onboarding returns ErrNotFound when the Application does not (yet)
	// manage the Onboarding.
	Onboarding(ctx context.Context, app, name string) (*OnboardingView, error)
}

// ErrNotFound: the Application or its Onboarding is not there.
var ErrNotFound = errors.New("not found")

// ClusterConnection is one cluster as argocd-server lists it: the
// application-controller refreshes the state every 10 s while the cluster
// has Applications.
type ClusterConnection struct {
	Name, Server  string
	Status        string // Successful, Failed or Unknown
	Message       string
	AttemptedAt   time.Time
	ServerVersion string
}

// ArgoCDAPI reads argocd-server's REST API with a bearer token (an Argo CD
// account with the apiKey capability; docs/inventory.md lists the RBAC it
// needs: clusters get, applications get on the spoke Applications).
type ArgoCDAPI struct {
	base   *url.URL
	token  tokenFile
	client *http.Client
}

// MaxArgoCDResponse bounds what one argocd-server answer may hold (a
// cluster list of 10,000 clusters with their API versions is ~30 MB).
const MaxArgoCDResponse = 128 << 20

// NewArgoCDAPI reads argocd-server at server (https:// or, on a trusted
// network, http://) with the token in tokenFile; caFile, if set, is the CA
// that signs argocd-server's certificate.
func NewArgoCDAPI(server, tokenPath, caFile string) (*ArgoCDAPI, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("--argocd-server %q: want http(s)://host[:port] without user info", redactURL(server))
	}
	a := &ArgoCDAPI{base: u, token: tokenFile{path: tokenPath}}
	if _, err := a.token.get(); err != nil {
		return nil, fmt.Errorf("argocd token: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // argocd-server is in the cluster: its token never goes through an egress proxy
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--argocd-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--argocd-ca-file %s: no PEM certificate in it", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	a.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	return a, nil
}

func (a *ArgoCDAPI) get(ctx context.Context, path string, q url.Values, out any) error {
	tok, err := a.token.get()
	if err != nil {
		return fmt.Errorf("argocd token: %w", err)
	}
	u := *a.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+string(tok))
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("argocd-server %s: %w", path, unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxArgoCDResponse+1))
	if err != nil {
		return fmt.Errorf("argocd-server %s: %w", path, err)
	}
	if len(body) > MaxArgoCDResponse {
		return fmt.Errorf("argocd-server %s: answer over %d bytes", path, MaxArgoCDResponse)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		}
		_ = json.Unmarshal(body, &e)
		// gRPC NotFound (5) is how argocd-server says "no such resource in the app".
		if resp.StatusCode == http.StatusNotFound || e.Code == 5 {
			return ErrNotFound
		}
		return fmt.Errorf("argocd-server %s: %s: %s", path, resp.Status, cutRunes(e.Message, 300))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("argocd-server %s: %w", path, err)
	}
	return nil
}

// unwrapURLError drops the URL (the query names the resource, never a
// credential, but the message is shorter without it).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Clusters implements ArgoCDState.
func (a *ArgoCDAPI) Clusters(ctx context.Context) ([]ClusterConnection, error) {
	var list struct {
		Items []struct {
			Name   string `json:"name"`
			Server string `json:"server"`
			Info   struct {
				ConnectionState struct {
					Status      string    `json:"status"`
					Message     string    `json:"message"`
					AttemptedAt time.Time `json:"attemptedAt"`
				} `json:"connectionState"`
				ServerVersion string `json:"serverVersion"`
			} `json:"info"`
		} `json:"items"`
	}
	if err := a.get(ctx, "/api/v1/clusters", nil, &list); err != nil {
		return nil, err
	}
	out := make([]ClusterConnection, 0, len(list.Items))
	for _, c := range list.Items {
		cs := c.Info.ConnectionState
		out = append(out, ClusterConnection{Name: c.Name, Server: c.Server, Status: cs.Status, Message: cs.Message,
			AttemptedAt: cs.AttemptedAt, ServerVersion: c.Info.ServerVersion})
	}
	return out, nil
}

// Onboarding implements ArgoCDState: argocd-server reads the object live
// from the spoke, with the credentials Argo CD holds.
func (a *ArgoCDAPI) Onboarding(ctx context.Context, app, name string) (*OnboardingView, error) {
	q := url.Values{"resourceName": {name}, "group": {"spokeforge.io"}, "version": {"v1alpha1"}, "kind": {"Onboarding"}, "namespace": {""}}
	var resp struct {
		Manifest string `json:"manifest"`
	}
	if err := a.get(ctx, "/api/v1/applications/"+url.PathEscape(app)+"/resource", q, &resp); err != nil {
		return nil, err
	}
	return ParseOnboarding([]byte(resp.Manifest))
}

// OnboardingView is what the inventory reads of an Onboarding.
type OnboardingView struct {
	Generation, ObservedGeneration int64
	FirstFailedBoundary            string
	CheckedAt                      time.Time
	KubernetesVersion              string
	NodeCount                      int
	ConnectedAt                    time.Time
	// Conditions by type: each boundary's and Ready.
	Conditions map[string]OnboardingCondition
}

// OnboardingCondition is one condition of an Onboarding's status.
type OnboardingCondition struct{ Status, Reason, Message string }

// ParseOnboarding reads the fields the inventory needs from an Onboarding's
// JSON. The agent writes the status; a malformed one is an error.
func ParseOnboarding(b []byte) (*OnboardingView, error) {
	var ob struct {
		Metadata struct {
			Generation int64 `json:"generation"`
		} `json:"metadata"`
		Status struct {
			ObservedGeneration  int64  `json:"observedGeneration"`
			FirstFailedBoundary string `json:"firstFailedBoundary"`
			CheckedAt           string `json:"checkedAt"`
			Connected           *struct {
				KubernetesVersion string `json:"kubernetesVersion"`
				NodeCount         int    `json:"nodeCount"`
				CheckedAt         string `json:"checkedAt"`
			} `json:"connected"`
			Conditions []struct {
				Type, Status, Reason, Message string
			} `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &ob); err != nil {
		return nil, fmt.Errorf("the Onboarding argocd-server returned: %w", err)
	}
	v := &OnboardingView{Generation: ob.Metadata.Generation, ObservedGeneration: ob.Status.ObservedGeneration,
		FirstFailedBoundary: ob.Status.FirstFailedBoundary, Conditions: map[string]OnboardingCondition{}}
	var err error
	if v.CheckedAt, err = optionalTime(ob.Status.CheckedAt); err != nil {
		return nil, fmt.Errorf("Onboarding status.checkedAt: %w", err)
	}
	if c := ob.Status.Connected; c != nil {
		v.KubernetesVersion, v.NodeCount = c.KubernetesVersion, c.NodeCount
		if v.ConnectedAt, err = optionalTime(c.CheckedAt); err != nil {
			return nil, fmt.Errorf("Onboarding status.connected.checkedAt: %w", err)
		}
	}
	for _, c := range ob.Status.Conditions {
		v.Conditions[c.Type] = OnboardingCondition{Status: c.Status, Reason: c.Reason, Message: c.Message}
	}
	return v, nil
}

func optionalTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, s)
}

// cutRunes cuts s to at most n runes, ending "..." when cut.
func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}
