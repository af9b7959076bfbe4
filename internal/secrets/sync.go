package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"

	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/secretfile"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// Tags the sync sets on every secret it writes; the cluster tag also finds
// the secrets it wrote (orphans).
const (
	TagCluster = "spokeforge.io/cluster"
	TagRecord  = "spokeforge.io/record"
	TagFile    = "spokeforge.io/file"
)

// MaxValueBytes is Secrets Manager's limit on a SecretString.
const MaxValueBytes = 65536

// API is the part of the Secrets Manager client the sync calls
// (*secretsmanager.Client).
type API interface {
	GetSecretValue(context.Context, *sm.GetSecretValueInput, ...func(*sm.Options)) (*sm.GetSecretValueOutput, error)
	CreateSecret(context.Context, *sm.CreateSecretInput, ...func(*sm.Options)) (*sm.CreateSecretOutput, error)
	PutSecretValue(context.Context, *sm.PutSecretValueInput, ...func(*sm.Options)) (*sm.PutSecretValueOutput, error)
	TagResource(context.Context, *sm.TagResourceInput, ...func(*sm.Options)) (*sm.TagResourceOutput, error)
	DescribeSecret(context.Context, *sm.DescribeSecretInput, ...func(*sm.Options)) (*sm.DescribeSecretOutput, error)
	ListSecrets(context.Context, *sm.ListSecretsInput, ...func(*sm.Options)) (*sm.ListSecretsOutput, error)
}

// Options configure a sync.
type Options struct {
	// Root is the gitops repo checkout; Cluster limits the sync to one
	// cluster ("" syncs every cluster record).
	Root, Cluster string
	// DryRun reads and compares but writes nothing.
	DryRun bool
	// Client returns the Secrets Manager client of a region.
	Client func(ctx context.Context, region string) (API, error)
	// Decrypt decrypts one file; nil uses the SOPS library (Decrypt).
	Decrypt func(display string, data []byte) (map[string]string, error)
	// Policy retries calls; the zero value uses DefaultPolicy.
	Policy Policy
	// Parallel bounds the secrets handled at once; 0 means 8.
	Parallel int
}

// job is one secret to synchronise.
type job struct {
	item   Item
	region string
	tags   map[string]string
	data   []byte // the encrypted file, nil when it is missing or refused
	fail   string // why the file cannot be used, before any AWS call
	// binding is the value the file's secretfile.BindingKey must decrypt to.
	binding string
}

// Sync synchronises the secret files of the repo (or of one cluster) into
// Secrets Manager and reports every secret. Record findings are returned as
// an error (bad input): nothing is done then.
func Sync(ctx context.Context, o Options) (*Report, error) {
	if o.Policy.Initial == 0 && o.Policy.Deadline == 0 {
		o.Policy = DefaultPolicy
	}
	if o.Decrypt == nil {
		o.Decrypt = Decrypt
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	clusters, err := loadClusters(o.Root, o.Cluster)
	if err != nil {
		return nil, err
	}
	var jobs []*job
	for _, c := range clusters {
		jobs = append(jobs, plan(o.Root, c)...)
	}
	rep := &Report{DryRun: o.DryRun}
	clients := map[string]API{}
	inventories := map[string]map[string]map[string]string{} // region → name → tags
	for _, j := range jobs {
		if _, ok := clients[j.region]; ok {
			continue
		}
		c, err := o.Client(ctx, j.region)
		if err != nil {
			return nil, fmt.Errorf("Secrets Manager client for %s: %w", j.region, err)
		}
		clients[j.region] = c
		inv, err := inventory(ctx, c, o.Policy)
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("orphans in %s not checked: ListSecrets: %s", j.region, awsReason(err)))
		}
		inventories[j.region] = inv
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.Parallel)
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func(j *job) {
			defer func() { <-sem; wg.Done() }()
			s := &secretSync{o: o, c: clients[j.region], j: j, listed: inventories[j.region]}
			s.run(ctx)
		}(j)
	}
	wg.Wait()
	for _, j := range jobs {
		rep.Items = append(rep.Items, j.item)
	}
	rep.Items = append(rep.Items, orphans(clusters, jobs, inventories, o.Cluster != "")...)
	rep.summarise()
	return rep, nil
}

// loadClusters reads the records to sync: the whole repo (with its
// cross-file rules) or clusters/<name>.
func loadClusters(root, cluster string) ([]validate.ClusterEntry, error) {
	if cluster != "" {
		if _, _, bad := record.ControlChar(cluster); bad || strings.ContainsAny(cluster, `/\`) || cluster == "." || cluster == ".." {
			return nil, fmt.Errorf("--cluster: not a cluster name")
		}
		rel := "clusters/" + cluster
		// As the whole-repo load refuses them: a symlinked folder would be read outside the repo.
		for _, p := range []string{"clusters", rel} {
			if st, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); err == nil && st.Mode()&fs.ModeSymlink != 0 {
				return nil, record.Errors{{File: p + "/", Msg: "is a symlink; cluster folders must be folders of the repo"}}
			}
		}
		e, errs := repo.LoadCluster(filepath.Join(root, filepath.FromSlash(rel)), rel)
		if len(errs) > 0 {
			return nil, errs
		}
		return []validate.ClusterEntry{e}, nil
	}
	r, errs := repo.Load(root)
	if len(errs) > 0 {
		return nil, errs
	}
	return r.Clusters, nil
}

// plan lists a cluster's secrets with their files: a missing or refused
// file, or one without a record entry, is that secret's failure alone.
func plan(root string, c validate.ClusterEntry) []*job {
	dir := secretfile.ClusterDir(c)
	files, errs := secretfile.ReadCluster(root, dir)
	refused := map[string]string{}
	for _, e := range errs {
		refused[e.File] = e.Error()
	}
	var jobs []*job
	listed := map[string]bool{}
	for i, s := range c.Cluster.Spec.Secrets {
		p := secretfile.Path(dir, s.Name)
		listed[p] = true
		j := &job{item: Item{Cluster: c.Cluster.Metadata.Name, Secret: c.Names.Secrets[i].Name, File: p},
			region: c.Cluster.Spec.Region, data: files[p], binding: secretfile.Binding(c.Cluster.Metadata.Name, s.Name),
			tags: map[string]string{TagCluster: c.Cluster.Metadata.Name, TagRecord: c.File, TagFile: p}}
		switch {
		case names.ReservedSecretProblem(c.Cluster, s.Name) != "":
			// A second layer under the record check (names.Derive): the hub's
			// store turns the credential into Argo CD's cluster Secret.
			j.fail = fmt.Sprintf("%s spec.secrets[%d].name %s; the sync never writes it (from %s)", c.File, i, names.ReservedSecretProblem(c.Cluster, s.Name), p)
		case refused[p] != "":
			j.fail = refused[p]
		case j.data == nil:
			j.fail = "the file " + p + " is missing: encrypt the secret with sops --encrypt (docs/secrets.md)"
		default:
			if errs := secretfile.CheckSecret(p, j.data, s.Keys, fmt.Sprintf("%s spec.secrets[%d]", c.File, i)); len(errs) > 0 {
				j.fail = errs.Error()
			}
		}
		jobs = append(jobs, j)
	}
	var extra []string
	for p := range files {
		if !listed[p] {
			extra = append(extra, p)
		}
	}
	for p := range refused {
		if !listed[p] && files[p] == nil {
			extra = append(extra, p)
		}
	}
	sort.Strings(extra)
	for _, p := range extra {
		why := refused[p]
		if why == "" {
			why = "no entry in " + c.File + " spec.secrets lists this file: add one, or remove the file"
		}
		jobs = append(jobs, &job{item: Item{Cluster: c.Cluster.Metadata.Name, File: p, Status: Failed, Reason: why}, fail: why})
	}
	sort.SliceStable(jobs, func(a, b int) bool {
		if jobs[a].item.Cluster != jobs[b].item.Cluster {
			return jobs[a].item.Cluster < jobs[b].item.Cluster
		}
		return jobs[a].item.Secret < jobs[b].item.Secret
	})
	return jobs
}

// inventory lists the secrets of a region the sync tagged (one call per 100).
func inventory(ctx context.Context, c API, p Policy) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	in := &sm.ListSecretsInput{MaxResults: aws.Int32(100), Filters: []smtypes.Filter{{Key: smtypes.FilterNameStringTypeTagKey, Values: []string{TagCluster}}}}
	for {
		var page *sm.ListSecretsOutput
		_, err := p.do(ctx, steady, func(ctx context.Context) error {
			var err error
			page, err = c.ListSecrets(ctx, in)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, s := range page.SecretList {
			tags := map[string]string{}
			for _, t := range s.Tags {
				tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			out[aws.ToString(s.Name)] = tags
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// orphans are secrets tagged with a cluster in scope that no record entry
// wants: reported with the command to delete them by hand.
func orphans(clusters []validate.ClusterEntry, jobs []*job, inv map[string]map[string]map[string]string, oneCluster bool) []Item {
	wanted := map[string]bool{}
	for _, j := range jobs {
		wanted[j.item.Secret] = true
	}
	inScope := map[string]bool{}
	for _, c := range clusters {
		inScope[c.Cluster.Metadata.Name] = true
	}
	var out []Item
	for region, secrets := range inv {
		for name, tags := range secrets {
			cl := tags[TagCluster]
			if wanted[name] || oneCluster && !inScope[cl] {
				continue
			}
			why := "no record lists it any more"
			if !inScope[cl] {
				why = "its cluster " + cl + " has no record any more"
			}
			out = append(out, Item{Cluster: cl, Secret: name, Status: Orphaned,
				Reason: fmt.Sprintf("%s; the sync never deletes: aws secretsmanager delete-secret --region %s --secret-id %s", why, region, name)})
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Cluster != out[b].Cluster {
			return out[a].Cluster < out[b].Cluster
		}
		return out[a].Secret < out[b].Secret
	})
	return out
}

// secretSync is one secret's synchronisation.
type secretSync struct {
	o      Options
	c      API
	j      *job
	listed map[string]map[string]string
}

func (s *secretSync) fail(format string, args ...any) {
	s.j.item.Status, s.j.item.Reason = Failed, fmt.Sprintf(format, args...)
}

// call runs one API call under the policy, counting retries.
func (s *secretSync) call(ctx context.Context, ph phase, fn func(context.Context) error) error {
	n, err := s.o.Policy.do(ctx, ph, fn)
	s.j.item.Retries += n - 1
	return err
}

func (s *secretSync) run(ctx context.Context) {
	it := &s.j.item
	if s.j.fail != "" {
		s.fail("%s", s.j.fail)
		return
	}
	values, err := s.o.Decrypt(it.File, s.j.data)
	if err != nil {
		s.fail("%s", decryptReason(err))
		return
	}
	// The binding is checked only now: its value is encrypted, and
	// authenticated with the others, so only the file's own data key could
	// have written it. What it holds is not repeated.
	bound, ok := values[secretfile.BindingKey]
	delete(values, secretfile.BindingKey)
	if !ok || bound != s.j.binding {
		s.fail("the file is bound to another secret: its %s value does not name %s, so it was encrypted for another cluster or secret and copied here; nothing was written (re-encrypt the value for this secret, docs/secrets.md)", secretfile.BindingKey, s.j.binding)
		return
	}
	want, err := encode(values)
	if err != nil {
		s.fail("%s", err)
		return
	}
	if len(want) > MaxValueBytes {
		s.fail("the value is %d bytes as JSON; Secrets Manager holds at most %d", len(want), MaxValueBytes)
		return
	}
	name := it.Secret
	var cur *sm.GetSecretValueOutput
	err = s.call(ctx, steady, func(ctx context.Context) error {
		var err error
		cur, err = s.c.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String(name)})
		return err
	})
	switch code := errorCode(err); {
	case err == nil:
		s.update(ctx, values, want, cur)
	case code == "ResourceNotFoundException" && valueMissing(err):
		// The secret exists without an AWSCURRENT value (a create whose
		// value was never put): put it now.
		s.update(ctx, values, want, &sm.GetSecretValueOutput{})
	case code == "ResourceNotFoundException":
		s.create(ctx, values, want)
	case code == "InvalidRequestException":
		s.fail("Secrets Manager refuses to read it (%s); if it is scheduled for deletion, restore it: aws secretsmanager restore-secret --secret-id %s", awsReason(err), name)
	default:
		s.fail("GetSecretValue: %s", awsReason(err))
	}
}

// valueMissing tells "the secret has no AWSCURRENT value" from "no such
// secret": Secrets Manager words the first "can't find the specified secret
// value for staging label".
func valueMissing(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && strings.Contains(api.ErrorMessage(), "secret value for")
}

// create writes a secret Secrets Manager does not show: CreateSecret with
// its tags, then PutSecretValue, retrying the gap before the new secret is
// visible. If CreateSecret says it exists (created meanwhile, or not
// visible to reads yet), the read is retried and the value compared, so a
// run right after another writes nothing twice.
func (s *secretSync) create(ctx context.Context, values map[string]string, want string) {
	it := &s.j.item
	if s.o.DryRun {
		it.Status, it.Keys = WouldCreate, sortedKeys(values)
		return
	}
	err := s.call(ctx, steady, func(ctx context.Context) error {
		_, err := s.c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String(it.Secret), Tags: smTags(s.j.tags),
			Description: aws.String("Written by spokeforge secrets sync from " + it.File + "; edit the file, not the secret")})
		return err
	})
	switch code := errorCode(err); {
	case err == nil:
		it.Keys = sortedKeys(values)
		if s.put(ctx, afterCreate, want) {
			it.Status, it.Tags = Created, true
		}
	case code == "ResourceExistsException":
		var cur *sm.GetSecretValueOutput
		err := s.call(ctx, afterExists, func(ctx context.Context) error {
			var err error
			cur, err = s.c.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String(it.Secret)})
			if valueMissing(err) {
				cur, err = &sm.GetSecretValueOutput{}, nil
			}
			return err
		})
		if err != nil {
			s.fail("CreateSecret said the secret exists, but it cannot be read: %s", awsReason(err))
			return
		}
		s.update(ctx, values, want, cur)
	default:
		s.fail("CreateSecret: %s", awsReason(err))
	}
}

// update compares the current value and tags and writes what differs.
func (s *secretSync) update(ctx context.Context, values map[string]string, want string, cur *sm.GetSecretValueOutput) {
	it := &s.j.item
	changed := diffKeys(aws.ToString(cur.SecretString), cur.SecretBinary != nil, values)
	tags, listed := s.listed[it.Secret]
	if !listed {
		var d *sm.DescribeSecretOutput
		err := s.call(ctx, steady, func(ctx context.Context) error {
			var err error
			d, err = s.c.DescribeSecret(ctx, &sm.DescribeSecretInput{SecretId: aws.String(it.Secret)})
			return err
		})
		if err != nil {
			s.fail("DescribeSecret: %s", awsReason(err))
			return
		}
		tags = map[string]string{}
		for _, t := range d.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	tagsDiffer := false
	for k, v := range s.j.tags {
		if tags[k] != v {
			tagsDiffer = true
		}
	}
	if len(changed) == 0 && !tagsDiffer {
		it.Status = Unchanged
		return
	}
	it.Keys = changed
	if s.o.DryRun {
		it.Status, it.Tags = WouldUpdate, tagsDiffer
		return
	}
	if len(changed) > 0 && !s.put(ctx, steady, want) {
		return
	}
	if tagsDiffer && !s.tag(ctx, steady) {
		return
	}
	it.Status, it.Tags = Updated, tagsDiffer
}

// put writes a new AWSCURRENT version. One ClientRequestToken serves every
// retry, so a call that succeeded but whose answer was lost is not a
// second version.
func (s *secretSync) put(ctx context.Context, ph phase, want string) bool {
	token := newToken()
	err := s.call(ctx, ph, func(ctx context.Context) error {
		_, err := s.c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: aws.String(s.j.item.Secret),
			SecretString: aws.String(want), ClientRequestToken: aws.String(token)})
		return err
	})
	if err != nil {
		s.fail("PutSecretValue: %s", awsReason(err))
		return false
	}
	return true
}

func (s *secretSync) tag(ctx context.Context, ph phase) bool {
	err := s.call(ctx, ph, func(ctx context.Context) error {
		_, err := s.c.TagResource(ctx, &sm.TagResourceInput{SecretId: aws.String(s.j.item.Secret), Tags: smTags(s.j.tags)})
		return err
	})
	if err != nil {
		s.fail("TagResource: %s", awsReason(err))
		return false
	}
	return true
}

// encode is the secret's value: a JSON object of its keys, sorted, the
// form ExternalSecrets read properties from.
func encode(values map[string]string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(values); err != nil {
		return "", errors.New("the value cannot be encoded as JSON")
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// diffKeys names the keys that differ between the current value and the
// wanted one: +added, ~changed, -removed; nil when they are equal. A
// current value that is not a JSON object of strings differs as a whole.
func diffKeys(current string, binary bool, want map[string]string) []string {
	var cur map[string]any
	if binary || json.Unmarshal([]byte(current), &cur) != nil {
		return []string{"(whole value)"}
	}
	var out []string
	for _, k := range sortedKeys(want) {
		v, ok := cur[k]
		switch sv, isString := v.(string); {
		case !ok:
			out = append(out, "+"+k)
		case !isString || sv != want[k]:
			out = append(out, "~"+k)
		}
	}
	var removed []string
	for k := range cur {
		if _, ok := want[k]; !ok {
			removed = append(removed, "-"+k)
		}
	}
	sort.Strings(removed)
	return append(out, removed...)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func smTags(m map[string]string) []smtypes.Tag {
	var out []smtypes.Tag
	for _, k := range []string{TagCluster, TagRecord, TagFile} {
		if v, ok := m[k]; ok {
			out = append(out, smtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
	}
	return out
}

// awsReason is an AWS error as "Code: message" (service messages carry no
// secret values), bounded.
func awsReason(err error) string {
	var api smithy.APIError
	msg := err.Error()
	if errors.As(err, &api) {
		msg = api.ErrorCode() + ": " + api.ErrorMessage()
		if strings.Contains(err.Error(), "(still failing after") {
			msg += err.Error()[strings.LastIndex(err.Error(), " (still failing after"):]
		}
	}
	return firstLine(msg)
}

// decryptReason keeps a decrypt error to its text (file and why).
func decryptReason(err error) string {
	var errs record.Errors
	if errors.As(err, &errs) {
		var parts []string
		for _, e := range errs {
			parts = append(parts, e.Error())
		}
		return strings.Join(parts, "; ")
	}
	return err.Error()
}
