package credentials

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// NewSecretClient returns a client for the Secrets of one namespace, over
// client-go's REST client with a scheme of core/v1 only. Not the typed
// clientset (k8s.io/client-go/kubernetes): that links every API group's
// client and registers every group's types at package init, which the
// spokeforge binary — the CMP runs it on every manifest refresh — paid at
// each start (about 5 ms and 30 MB of binary) for a command that writes one
// Secret.
func NewSecretClient(cfg *rest.Config, namespace string) (SecretClient, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &restSecrets{rc: rc, ns: namespace, params: runtime.NewParameterCodec(scheme)}, nil
}

type restSecrets struct {
	rc     rest.Interface
	ns     string
	params runtime.ParameterCodec
}

func (c *restSecrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	out := &corev1.Secret{}
	err := c.rc.Get().Namespace(c.ns).Resource("secrets").Name(name).VersionedParams(&opts, c.params).Do(ctx).Into(out)
	return out, err
}

func (c *restSecrets) Create(ctx context.Context, s *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error) {
	out := &corev1.Secret{}
	err := c.rc.Post().Namespace(c.ns).Resource("secrets").VersionedParams(&opts, c.params).Body(s).Do(ctx).Into(out)
	return out, err
}

func (c *restSecrets) Update(ctx context.Context, s *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error) {
	out := &corev1.Secret{}
	err := c.rc.Put().Namespace(c.ns).Resource("secrets").Name(s.Name).VersionedParams(&opts, c.params).Body(s).Do(ctx).Into(out)
	return out, err
}
