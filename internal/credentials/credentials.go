// Package credentials turns the spoke's workload-identity certificate into
// short-lived AWS credentials through IAM Roles Anywhere and keeps them in
// Kubernetes Secrets that External Secrets' AWS provider reads
// (secretRef + sessionTokenSecretRef), refreshing them before they expire.
// One Secret serves the ClusterSecretStore; each namespace with a registry
// ExternalSecret gets a copy, because External Secrets reads a generator's
// secretRef in the ExternalSecret's namespace, whatever namespace it names.
// Credential values never reach logs or errors.
package credentials

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	helper "github.com/aws/rolesanywhere-credential-helper/aws_signing_helper"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Secret keys, as the rendered ClusterSecretStore references them.
const (
	KeyAccessKeyID     = "access-key-id"
	KeySecretAccessKey = "secret-access-key"
	KeySessionToken    = "session-token"
	KeyExpiration      = "expiration"
)

// Options configure one refresher.
type Options struct {
	Certificate, PrivateKey    string // PEM file paths (the cert-manager Secret mount)
	TrustAnchorArn, ProfileArn string
	RoleArn, Region            string
	SessionDuration            time.Duration
	Endpoint                   string      // Roles Anywhere endpoint override (tests, private endpoints)
	Secrets                    []SecretRef // every Secret to keep; at least one
	RefreshBefore, RetryMax    time.Duration
}

// SecretRef names one Secret to write.
type SecretRef struct{ Namespace, Name string }

func (r SecretRef) String() string { return r.Namespace + "/" + r.Name }

// Issued is what one exchange produced, without the secret parts.
type Issued struct {
	AccessKeyID string
	Expiration  time.Time
}

// Exchange signs a CreateSession request with the certificate's key and
// returns temporary credentials.
func Exchange(o Options) (helper.CredentialProcessOutput, error) {
	opts := &helper.CredentialsOpts{
		CertificateId:     o.Certificate,
		PrivateKeyId:      o.PrivateKey,
		TrustAnchorArnStr: o.TrustAnchorArn,
		ProfileArnStr:     o.ProfileArn,
		RoleArn:           o.RoleArn,
		Region:            o.Region,
		SessionDuration:   int(o.SessionDuration.Seconds()),
		Endpoint:          o.Endpoint,
	}
	signer, alg, err := helper.GetSigner(opts)
	if err != nil {
		return helper.CredentialProcessOutput{}, fmt.Errorf("loading the workload certificate %s: %w", o.Certificate, err)
	}
	defer signer.Close()
	out, err := helper.GenerateCredentials(opts, signer, alg)
	if err != nil {
		return helper.CredentialProcessOutput{}, fmt.Errorf("Roles Anywhere CreateSession for role %s: %w", o.RoleArn, err)
	}
	return out, nil
}

// SecretClient is what the refresher needs of a Secrets client for one
// namespace: client-go's typed SecretInterface has it, and so has the
// light REST client of NewSecretClient.
type SecretClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
	Create(ctx context.Context, secret *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error)
	Update(ctx context.Context, secret *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error)
}

// SecretClients returns the Secrets client of a namespace.
type SecretClients func(namespace string) (SecretClient, error)

// Store writes the credentials into every Secret of o, creating each if
// needed. It stops at the first failure: the next refresh writes them all.
func Store(ctx context.Context, clients SecretClients, o Options, c helper.CredentialProcessOutput) error {
	if len(o.Secrets) == 0 {
		return errors.New("no Secret to write the credentials into")
	}
	for _, ref := range o.Secrets {
		secrets, err := clients(ref.Namespace)
		if err != nil {
			return err
		}
		if err := store(ctx, secrets, ref, c); err != nil {
			return err
		}
	}
	return nil
}

func store(ctx context.Context, secrets SecretClient, ref SecretRef, c helper.CredentialProcessOutput) error {
	data := map[string][]byte{
		KeyAccessKeyID:     []byte(c.AccessKeyId),
		KeySecretAccessKey: []byte(c.SecretAccessKey),
		KeySessionToken:    []byte(c.SessionToken),
		KeyExpiration:      []byte(c.Expiration),
	}
	cur, err := secrets.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "spokeforge"}},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}, metav1.CreateOptions{})
	case err == nil:
		cur.Data = data
		_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing Secret %s: %w", ref, err)
	}
	return nil
}

// RefreshOnce exchanges and stores once.
func RefreshOnce(ctx context.Context, secrets SecretClients, o Options) (Issued, error) {
	c, err := Exchange(o)
	if err != nil {
		return Issued{}, err
	}
	exp, err := time.Parse(time.RFC3339, c.Expiration)
	if err != nil {
		return Issued{}, fmt.Errorf("Roles Anywhere returned an unreadable expiration %q", c.Expiration)
	}
	if err := Store(ctx, secrets, o, c); err != nil {
		return Issued{}, err
	}
	return Issued{AccessKeyID: c.AccessKeyId, Expiration: exp}, nil
}

// Run refreshes until ctx ends: RefreshBefore ahead of each expiry, and
// after a failure with backoff doubling from 5 s to RetryMax.
func Run(ctx context.Context, secrets SecretClients, o Options, log *slog.Logger) error {
	backoff := 5 * time.Second
	for {
		var wait time.Duration
		iss, err := RefreshOnce(ctx, secrets, o)
		if err != nil {
			log.Error("credential refresh failed; retrying", "error", err, "retryIn", backoff)
			wait, backoff = backoff, min(backoff*2, o.RetryMax)
		} else {
			backoff = 5 * time.Second
			wait = max(time.Until(iss.Expiration)-o.RefreshBefore, 30*time.Second)
			log.Info("credentials refreshed", "secrets", secretNames(o.Secrets),
				"expiration", iss.Expiration.Format(time.RFC3339), "nextRefresh", wait.Round(time.Second))
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

func secretNames(refs []SecretRef) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.String()
	}
	return strings.Join(names, ",")
}
