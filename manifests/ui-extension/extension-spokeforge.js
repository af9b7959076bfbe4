// spokeforge's Argo CD UI extension: a "Contracts" tab on spokeforge.io/Onboarding resources
// that shows the onboarding boundaries as a ladder, in the order they are established
// (docs/contracts.md), from the status the spokeforge agent writes; and, where the UI has app
// views, the same ladder as a "Contracts" view of a spoke's app-of-apps registry-<cluster> (and
// of the Application that manages the Onboarding).
//
// Plain JavaScript, no build step: Argo CD's main bundle sets window.React and
// window.extensionsAPI before it loads /extensions.js, the concatenation of every
// extension*.js under /tmp/extensions/ (manifests/ui-extension mounts this file there).
// One file for both React lines Argo CD ships: React 16 (v3.4) and React 19 (v3.5 on; Argo CD's
// docs/operator-manual/upgrading/ui-extensions-react-19-upgrading.md). It brings no React of its
// own (no bundled jsx-runtime) and only calls window.React.createElement with plain props and
// function components: no string refs, defaultProps, propTypes, legacy context, createFactory or
// ReactDOM.render, which React 19 removed. What not every UI has is feature-detected: the app
// view needs extensionsAPI.registerAppViewExtension with its shouldDisplay argument (v3.4 and
// v3.6 have it, v3.2 has not) and React hooks; without them only the tab is registered.
// Every field is optional: an Onboarding the agent never wrote shows "not checked yet", and one
// written by an agent without status.boundaries shows each condition's message as its evidence.
//
// The status is data from a spoke, to be read and never trusted: a field is read only when it is
// the object's own (get), so a condition type, boundary name or result such as "constructor" or
// "__proto__" names nothing but itself; lookups by such a value go through a Map or an own-property
// check; every value is type-checked before use; and anything the tab still cannot read shows a
// "cannot read" line instead of blanking it. Whoever writes the object can make it as large as the
// API server takes (and the CRD's bounds are the spoke's to change), so what is read and rendered is
// bounded whatever the status holds: lists are read up to MAX_SCAN entries, at most MAX_ROWS
// boundaries and MAX_EVIDENCE evidence items are rendered, texts are cut with an ellipsis, a
// message makes at most MAX_CODE code spans, and what was left out is counted ("N more not shown").
// Nothing walks a value to an arbitrary depth, and nothing from the status is JSON.stringify'd:
// a hostile status of 500,000 entries or of 10 MB strings renders in well under a second into a
// few hundred elements (TestUIExtensionBoundedStatus).
// The Onboarding shown is the one spokeforge renders for the spoke: named after the cluster,
// cluster-scoped, in the spoke Application spoke-<cluster>. An object written beside it (render
// refuses an overlay that adds one; anyone with write access to the spoke can still create one) is
// never the one the app view reads, and its own tab says it is not the spoke's.
((window) => {
  const React = window.React;
  const api = window.extensionsAPI;
  if (!React || typeof React.createElement !== 'function' || !api || typeof api.registerResourceExtension !== 'function') {
    return; // not inside the Argo CD UI
  }
  const h = React.createElement;

  const BOUNDARIES = ['Identity', 'Secrets', 'Certificates', 'Registry', 'Queues', 'Storage', 'Workload'];
  // Argo CD's health colours and icons (ui/src/app/shared/components/colors.ts, HealthStatusIcon).
  // Tables looked up by a value from the status have no prototype and are read through own().
  const table = (entries) => Object.freeze(Object.assign(Object.create(null), entries));
  const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const own = (t, k, fallback) => (typeof k === 'string' && has(t, k) ? t[k] : fallback);
  const STATES = table({
    holds: {label: 'Holds', color: '#18BE94', icon: 'fa-heart'},
    failed: {label: 'Failed', color: '#E96D76', icon: 'fa-heart-broken'},
    pending: {label: 'Pending', color: '#0DADEA', icon: 'fa-circle-notch'},
    unknown: {label: 'Not checked', color: '#CCD6DD', icon: 'fa-question-circle'},
    unchecked: {label: 'Not checked yet', color: '#CCD6DD', icon: 'fa-question-circle'},
  });
  const stateStyle = (state) => own(STATES, state, STATES.unknown);

  const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  // get reads a field of the status only when it is the object's own.
  const get = (o, k) => (isObj(o) && has(o, k) ? o[k] : undefined);
  const str = (v) => (typeof v === 'string' ? v : typeof v === 'number' && isFinite(v) ? String(v) : '');
  const arr = (v) => (Array.isArray(v) ? v : []);
  // scan: the first MAX_SCAN entries of a list, which is all a status from spokeforge's agent has
  // (at most 8 conditions, 7 boundaries, 16 evidence items).
  const MAX_SCAN = 256;
  const scan = (v) => arr(v).slice(0, MAX_SCAN);
  // A count or generation: a non-negative safe integer, or its decimal string; anything else 0.
  const count = (v) => {
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^[0-9]{1,16}$/.test(v) ? Number(v) : NaN;
    return Number.isSafeInteger(n) && n >= 0 ? n : 0;
  };
  // What is rendered at most, a little over what spokeforge's agent writes (v1alpha1.MaxEvidence*):
  // a spoke cannot make the tab unusable.
  const MAX_TEXT = 8192; // a message
  const MAX_NAME = 256; // a name, reason, evidence check or version
  const MAX_DETAIL = 1024; // an evidence item's detail
  const MAX_EVIDENCE = 16; // evidence items of a boundary
  const MAX_ROWS = 16; // boundaries in the ladder (spokeforge declares 7)
  const MAX_CODE = 16; // code spans of one message
  const clip = (s, max) => {
    const n = max || MAX_TEXT;
    return s.length > n ? s.slice(0, n) + '… (' + s.length + ' characters)' : s;
  };
  const short = (s) => clip(s, MAX_NAME);

  // Condition status and severity (healthchecks/status.go): True holds; False with severity
  // Warning is pending (being retried); other False failed; Unknown was not checked.
  const stateOf = (c) => {
    if (!c) return 'unchecked';
    const status = str(get(c, 'status'));
    if (status === 'True') return 'holds';
    if (status === 'False') return str(get(c, 'severity')) === 'Warning' ? 'pending' : 'failed';
    return 'unknown';
  };

  // Only a string as long as a date-time is parsed.
  const parseTime = (v) => {
    const s = str(v);
    if (s.length > 64) return null;
    const t = Date.parse(s);
    return isNaN(t) ? null : new Date(t);
  };
  const relative = (d) => {
    const s = Math.round((d.getTime() - Date.now()) / 1000);
    const a = Math.abs(s);
    const n = a < 90 ? a + 's' : a < 5400 ? Math.round(a / 60) + 'm' : a < 129600 ? Math.round(a / 3600) + 'h' : Math.round(a / 86400) + 'd';
    return s <= 0 ? n + ' ago' : 'in ' + n;
  };
  const when = (v) => {
    const d = parseTime(v);
    return d ? h('span', {title: d.toISOString()}, relative(d) + ' (' + d.toISOString().replace('.000Z', 'Z') + ')') : null;
  };
  // A backed-off boundary's next retry: status.boundaries[].nextRetryTime, or, from an agent that
  // does not write it, the condition message's "cert-manager retries at <RFC 3339>"
  // (healthchecks/kube.go). The source is kept so a test can tell which was read.
  const RFC3339 = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?(?:Z|[+-]\\d\\d:\\d\\d)';
  const nextRetry = (bs, message) => {
    const at = get(bs, 'nextRetryTime');
    // Only a date-time string: Date.parse would read a number as a year.
    if (typeof at === 'string' && new RegExp('^' + RFC3339 + '$').test(at) && parseTime(at)) return {at, source: 'status'};
    const m = new RegExp('retries at (' + RFC3339 + ')').exec(message.slice(0, MAX_TEXT));
    return m ? {at: m[1], source: 'message'} : null;
  };
  // status.boundaries[].evidence (healthchecks/status.go): the items naming a check; [] when absent.
  const evidenceOf = (bs) => scan(get(bs, 'evidence')).filter((e) => str(get(e, 'check')));
  const RESULTS = table({Passed: 'holds', Failed: 'failed', Pending: 'pending', NotChecked: 'unknown'});
  // Commands in the agent's messages are in backticks: shown as code, so they can be copied; past
  // MAX_CODE spans the rest is plain text.
  const text = (message, max) => {
    const parts = clip(message, max).split('`');
    const shown = parts.slice(0, 2 * MAX_CODE);
    if (parts.length > shown.length) shown.push(parts.slice(shown.length).join('`'));
    return shown.map((part, i) => (i % 2 ? h('code', {key: i, className: 'spokeforge-contracts__command'}, part) : part));
  };

  const wrap = {overflowWrap: 'anywhere', wordBreak: 'break-word', whiteSpace: 'pre-wrap'};
  const badge = (state) => {
    const s = stateStyle(state);
    return h('span', {className: 'spokeforge-contracts__state', style: {color: s.color, fontWeight: 600, whiteSpace: 'nowrap'}},
      h('i', {className: 'fa ' + s.icon, style: {marginRight: '5px'}}), s.label);
  };

  // The parts of the tab are plain functions called by Contracts, not components, so whatever one
  // of them cannot read is caught by Contracts' own try.
  const evidence = (items, omitted) =>
    h('ul', {className: 'spokeforge-contracts__evidence', style: {margin: 0, padding: 0, listStyle: 'none'}},
      items.slice(0, MAX_EVIDENCE).map((e, i) => {
        const result = str(get(e, 'result'));
        const s = stateStyle(own(RESULTS, result, 'unknown'));
        const detail = str(get(e, 'detail'));
        return h('li', {key: i, className: 'spokeforge-contracts__evidence-item', 'data-result': short(result), style: {marginBottom: '3px', ...wrap}},
          h('i', {className: 'fa ' + s.icon, title: s.label, style: {color: s.color, marginRight: '5px'}}),
          h('b', null, short(str(get(e, 'check')))), detail ? ': ' : '', text(detail, MAX_DETAIL));
      }),
      omitted > 0 ? h('li', {key: 'omitted', className: 'spokeforge-contracts__evidence-omitted', style: {color: '#6D7F8B'}}, 'and ' + omitted + ' more not shown') : null);

  const retryLine = (className, retry) =>
    h('div', {className, 'data-source': retry.source, style: {marginTop: '5px'}}, 'Next automatic retry: ', when(retry.at));

  const firstFailedBox = (boundary, cond, bs, ready) => {
    const state = stateOf(cond);
    const s = stateStyle(state);
    const message = str(get(cond, 'message'));
    const reason = str(get(cond, 'reason'));
    const retry = nextRetry(bs, message);
    return h('div', {className: 'spokeforge-contracts__first-failed', 'data-boundary': short(boundary),
      style: {borderLeft: '6px solid ' + s.color, background: '#fff', padding: '10px 15px', margin: '0 0 15px', boxShadow: '1px 1px 3px rgba(0,0,0,.1)'}},
      h('div', {style: {fontSize: '15px', marginBottom: '5px'}}, badge(state), ' First failed boundary: ', h('b', null, short(boundary)),
        reason ? ' (' + short(reason) + ')' : ''),
      message ? h('div', {className: 'spokeforge-contracts__hint', style: wrap}, text(message)) : null,
      retry ? retryLine('spokeforge-contracts__next-retry', retry) : null,
      ready ? h('div', {style: {marginTop: '5px', color: '#6D7F8B', ...wrap}}, clip(ready)) : null);
  };

  const row = (boundary, cond, bs, first) => {
    const state = stateOf(cond);
    const message = str(get(cond, 'message'));
    const items = evidenceOf(bs);
    // The first failed boundary's retry is in the box above the ladder.
    const retry = cond && !first ? nextRetry(bs, message) : null;
    // Items past MAX_EVIDENCE, and past the scan, are counted as not shown.
    const listed = arr(get(bs, 'evidence')).length;
    const omitted = count(get(bs, 'evidenceOmitted')) + Math.max(items.length - MAX_EVIDENCE, 0) + Math.max(listed - MAX_SCAN, 0);
    return h('tr', {key: boundary, className: 'spokeforge-contracts__boundary', 'data-boundary': short(boundary), 'data-state': state,
      style: {borderLeft: '4px solid ' + stateStyle(state).color, background: first ? 'rgba(233,109,118,.08)' : undefined, verticalAlign: 'top'}},
      h('td', {style: {padding: '8px', fontWeight: 600, ...wrap}}, short(boundary)),
      h('td', {style: {padding: '8px'}}, badge(state)),
      h('td', {style: {padding: '8px', ...wrap}}, short(str(get(cond, 'reason')))),
      h('td', {style: {padding: '8px', ...wrap}},
        !cond ? 'not checked yet' : items.length ? evidence(items, omitted) : text(message),
        retry ? retryLine('spokeforge-contracts__row-retry', retry) : null),
      h('td', {style: {padding: '8px', fontSize: '12px'}}, when(get(cond, 'lastTransitionTime'))));
  };

  // Conditions by type and boundaries by name, the first of each: Maps, so any name is only a key.
  const byName = (items, field) => {
    const m = new Map();
    scan(items).forEach((item) => {
      const name = str(get(item, field));
      if (name && !m.has(name)) m.set(name, item);
    });
    return m;
  };

  // The Onboarding spokeforge renders for a cluster (internal/names, cmp/render/templates/
  // spoke.yaml.tmpl): named after the cluster, cluster-scoped, managed by its spoke Application.
  const SPOKE_APP = 'spoke-';
  const isKind = (r, group, kind) => get(r, 'group') === group && get(r, 'kind') === kind && str(get(r, 'name')) !== '';
  const isSpokeOnboarding = (r, cluster) => isKind(r, 'spokeforge.io', 'Onboarding') && get(r, 'name') === cluster && str(get(r, 'namespace')) === '';
  // notTheSpokes: why the Onboarding res, shown on the page of Application app, is not the one
  // spokeforge renders for that spoke; '' when it is, or when no Application is known.
  const notTheSpokes = (app, res) => {
    const meta = get(res, 'metadata');
    const appName = str(get(get(app, 'metadata'), 'name'));
    if (!appName || (appName === SPOKE_APP + str(get(meta, 'name')) && str(get(meta, 'namespace')) === '')) return '';
    return appName.startsWith(SPOKE_APP) && appName.length > SPOKE_APP.length
      ? 'This is not the Onboarding spokeforge renders for Application ' + short(appName) + ' (that one is ' + short(appName.slice(SPOKE_APP.length)) +
        ', cluster-scoped): something else added it, and its status says nothing about the spoke.'
      : 'This Onboarding is not managed by a spoke Application (spoke-<cluster>) but by ' + short(appName) + ': its status is not what spokeforge reads for a spoke.';
  };
  // listed: a line for a list longer than what is read or rendered.
  const listed = (what, v, shown) => {
    const n = arr(v).length;
    return n > shown ? h('li', {key: what}, what + ' lists ' + n + ' entries: ' + (n - shown) + ' more not shown.') : null;
  };

  const render = (props) => {
    const res = get(props, 'resource');
    const meta = get(res, 'metadata');
    const spec = get(res, 'spec');
    const status = get(res, 'status');
    const conditions = get(status, 'conditions');
    const conds = byName(conditions, 'type');
    const boundaries = byName(get(status, 'boundaries'), 'name');
    // Declared boundaries, each once (a repeated name would repeat a React key).
    const declared = Array.from(new Set(scan(get(spec, 'boundaries')).filter((b) => typeof b === 'string' && b)));
    const order = (declared.length ? declared : BOUNDARIES).slice(0, MAX_ROWS);
    const foreign = notTheSpokes(get(props, 'application'), res);
    const omitted = [listed('status.conditions', conditions, MAX_SCAN), listed('status.boundaries', get(status, 'boundaries'), MAX_SCAN),
      declared.length > MAX_ROWS ? listed('spec.boundaries', get(spec, 'boundaries'), MAX_ROWS) : null].filter((x) => x);
    const checked = conds.size > 0 || parseTime(get(status, 'checkedAt'));
    const firstFailed = str(get(status, 'firstFailedBoundary'));
    const ready = conds.get('Ready');
    const connected = get(status, 'connected');
    const generation = count(get(meta, 'generation'));
    const observed = count(get(status, 'observedGeneration'));
    const nodeCount = get(connected, 'nodeCount');
    const version = str(get(connected, 'kubernetesVersion'));
    // What the agent writes but the tab cannot read is said, not silently dropped.
    const unreadable = status !== undefined && !isObj(status) ? 'status is not an object'
      : conditions !== undefined && !Array.isArray(conditions) ? 'status.conditions is not a list' : '';

    return h('div', {className: 'spokeforge-contracts', style: {padding: '15px 0'}},
      h('div', {className: 'spokeforge-contracts__summary', style: {marginBottom: '10px'}},
        h('span', {style: {fontSize: '16px', marginRight: '10px'}}, 'Onboarding ', h('b', null, short(str(get(meta, 'name'))) || '?')),
        checked
          ? h('span', null, 'last checked ', when(get(status, 'checkedAt')) || 'at an unknown time')
          : h('span', {className: 'spokeforge-contracts__unchecked'}, 'Not checked yet: the spokeforge agent in the spoke has not written this status.')),
      foreign
        ? h('div', {className: 'spokeforge-contracts__not-the-spokes', style: {marginBottom: '10px', color: '#E96D76', fontWeight: 600, ...wrap}},
          h('i', {className: 'fa fa-exclamation-triangle', style: {marginRight: '5px'}}), foreign)
        : null,
      unreadable
        ? h('div', {className: 'spokeforge-contracts__unreadable', style: {marginBottom: '10px', color: '#E96D76'}}, 'Cannot read this status: ' + unreadable + '.')
        : null,
      omitted.length
        ? h('ul', {className: 'spokeforge-contracts__omitted', style: {margin: '0 0 10px', padding: 0, listStyle: 'none', color: '#6D7F8B'}}, omitted)
        : null,
      get(spec, 'stabilization') === true
        ? h('div', {className: 'spokeforge-contracts__stabilization', style: {marginBottom: '10px', color: '#6D7F8B'}},
          h('i', {className: 'fa fa-pause-circle', style: {marginRight: '5px'}}),
          'Stabilization: workload Applications are delivered without automated sync; each sync is started by hand.')
        : null,
      checked && generation && observed && observed < generation
        ? h('div', {style: {color: '#6D7F8B', marginBottom: '10px'}}, 'Checked against generation ' + observed + ' of the spec; the current one is ' + generation + '.')
        : null,
      firstFailed
        ? firstFailedBox(firstFailed, conds.get(firstFailed), boundaries.get(firstFailed), str(get(ready, 'message')))
        : checked && stateOf(ready) === 'holds'
          ? h('div', {className: 'spokeforge-contracts__all-hold', style: {borderLeft: '6px solid ' + STATES.holds.color, background: '#fff', padding: '10px 15px', marginBottom: '15px', ...wrap}},
            badge('holds'), ' ', clip(str(get(ready, 'message'))) || 'all onboarding contracts hold')
          : null,
      h('table', {className: 'spokeforge-contracts__ladder', style: {width: '100%', tableLayout: 'fixed', borderCollapse: 'collapse', background: '#fff'}},
        h('colgroup', null, h('col', {style: {width: '120px'}}), h('col', {style: {width: '150px'}}), h('col', {style: {width: '190px'}}), h('col', null), h('col', {style: {width: '210px'}})),
        h('thead', null, h('tr', {style: {textAlign: 'left', color: '#6D7F8B', fontSize: '12px', textTransform: 'uppercase'}},
          ['Boundary', 'State', 'Reason', 'Evidence', 'Since'].map((t) => h('th', {key: t, style: {padding: '8px'}}, t)))),
        h('tbody', null, order.map((b) => row(b, conds.get(b), boundaries.get(b), b === firstFailed)))),
      h('div', {className: 'spokeforge-contracts__connected', style: {marginTop: '15px', color: '#6D7F8B'}},
        'Connected: ',
        version || nodeCount !== undefined
          ? [h('span', {key: 'v'}, 'Kubernetes ' + (short(version) || '(unknown version)') + ', ' +
              (typeof nodeCount === 'number' && isFinite(nodeCount) ? nodeCount : '?') + ' nodes, read '), h('span', {key: 't'}, when(get(connected, 'checkedAt')) || 'at an unknown time')]
          : 'not read yet'));
  };

  const Contracts = (props) => {
    try {
      return render(props);
    } catch (e) {
      // A shape nothing above expected: say so rather than blank the tab.
      return h('div', {className: 'spokeforge-contracts spokeforge-contracts__unreadable', style: {padding: '15px 0', color: '#E96D76'}},
        'Cannot read this Onboarding\'s status: ' + (e instanceof Error ? e.message : 'unexpected value') + '.');
    }
  };

  api.registerResourceExtension(Contracts, 'spokeforge.io', 'Onboarding', 'Contracts', {icon: 'fa-list-ol'});

  // The app view: the ladder as a view of the Application page, beside the tree, pods, network
  // and list views. It shows on the app-of-apps registry-<cluster> (labelled spokeforge.io/cluster,
  // examples/gitops/hub/clusters-appset.yaml) whose child spoke Application spoke-<cluster>
  // (internal/names) manages the cluster's Onboarding, and on a spoke Application spoke-<cluster>
  // that manages it. Either way it reads the Onboarding named <cluster>, cluster-scoped, and no
  // other, whatever else the spoke Application lists and in whichever order: another Onboarding
  // beside it cannot take its place. A view gets only the Application and its resource tree, and
  // the Onboarding lives on the spoke, in the child's tree: it is read as the UI reads a resource
  // for its panel, through Argo CD's API with the user's session (GET /api/v1/applications/<child>
  // for the child's managed resources, then GET /api/v1/applications/<child>/resource for the
  // Onboarding's live state) and nothing else. It is read again every 15 s, and at once when the
  // watched resource's health or sync status changes in the Application shown.
  const REFRESH_MS = 15000;
  const ref = (r) => ({name: str(get(r, 'name')), namespace: str(get(r, 'namespace')), version: str(get(r, 'version'))});
  // watchedState: the resource's health and sync status, which trigger a read at once when they change.
  // Health comes from the resource tree: since v3.0 Argo CD keeps none in status.resources
  // (resourceHealthSource: appTree).
  const watchedState = (r, tree) => {
    const node = arr(get(tree, 'nodes')).find((n) => str(get(n, 'group')) === str(get(r, 'group')) && get(n, 'kind') === get(r, 'kind') &&
      get(n, 'name') === get(r, 'name') && str(get(n, 'namespace')) === str(get(r, 'namespace')));
    return str(get(get(node, 'health'), 'status')) + '/' + str(get(r, 'status'));
  };

  // sourceOf: the spoke Application and cluster whose Onboarding the view of app (with its
  // resource tree) shows, or null for none.
  const sourceOf = (app, tree) => {
    const meta = get(app, 'metadata');
    const name = str(get(meta, 'name'));
    const namespace = str(get(meta, 'namespace'));
    const resources = arr(get(get(app, 'status'), 'resources'));
    if (!name) return null;
    if (name.startsWith(SPOKE_APP) && name.length > SPOKE_APP.length) {
      const cluster = name.slice(SPOKE_APP.length);
      const own = resources.find((r) => isSpokeOnboarding(r, cluster));
      if (own) return {app: name, appNamespace: namespace, cluster, onboarding: ref(own), via: '', state: watchedState(own, tree)};
    }
    const cluster = str(get(get(meta, 'labels'), 'spokeforge.io/cluster'));
    const child = cluster ? resources.find((r) => isKind(r, 'argoproj.io', 'Application') && get(r, 'name') === SPOKE_APP + cluster) : undefined;
    if (!child) return null;
    return {app: SPOKE_APP + cluster, appNamespace: str(get(child, 'namespace')) || namespace, cluster, onboarding: null, via: name, state: watchedState(child, tree)};
  };
  const shouldDisplay = (app) => {
    try {
      return sourceOf(app) !== null;
    } catch (e) {
      return false;
    }
  };

  // Argo CD's API under the UI's base href (argocd-server rewrites <base href> for --rootpath).
  const apiURL = (app, path, query) => {
    const url = new URL('api/v1/applications/' + encodeURIComponent(app) + path, window.document.baseURI);
    Object.keys(query).forEach((k) => url.searchParams.set(k, query[k]));
    return url.toString();
  };
  // readJSON: a GET of Argo CD's API, parsed; an HTTP error carries the API's message. An answer
  // over MAX_ANSWER characters (far over the API server's object size limit) is not parsed.
  const MAX_ANSWER = 8 << 20;
  const readJSON = (url) =>
    window.fetch(url, {credentials: 'same-origin', headers: {Accept: 'application/json'}}).then((res) =>
      res.text().then((body) => {
        if (body.length > MAX_ANSWER) throw new Error('Argo CD\'s answer is ' + body.length + ' characters long, more than the view reads');
        let v;
        try {
          v = JSON.parse(body);
        } catch (e) {
          v = undefined;
        }
        if (!res.ok) throw new Error('Argo CD answered HTTP ' + res.status + (str(get(v, 'message')) ? ': ' + str(get(v, 'message')) : ''));
        if (v === undefined) throw new Error('Argo CD\'s answer is not JSON');
        return v;
      }));
  // readOnboarding: the cluster's Onboarding, found in src.app's managed resources unless known;
  // null when the view was closed (live() false) before it was read.
  const readOnboarding = (src, known, live) =>
    (known ? Promise.resolve(known) : readJSON(apiURL(src.app, '', {appNamespace: src.appNamespace})).then((app) => {
      const r = arr(get(get(app, 'status'), 'resources')).find((x) => isSpokeOnboarding(x, src.cluster));
      if (!r) throw new Error('Application ' + src.app + ' manages no spokeforge.io Onboarding ' + src.cluster + ' yet');
      return ref(r);
    })).then((ob) => !live() ? null :
      readJSON(apiURL(src.app, '/resource', {appNamespace: src.appNamespace, namespace: ob.namespace, resourceName: ob.name,
        version: ob.version, kind: 'Onboarding', group: 'spokeforge.io'})).then((res) => {
        const manifest = get(res, 'manifest');
        if (typeof manifest !== 'string') throw new Error('Argo CD\'s answer holds no manifest');
        try {
          return {ob, resource: JSON.parse(manifest)};
        } catch (e) {
          throw new Error('the Onboarding\'s manifest is not JSON');
        }
      }));

  const AppView = (props) => {
    const src = sourceOf(get(props, 'application'), get(props, 'tree'));
    // The last Onboarding read, when, and the last error (cleared by a good read).
    const [read, setRead] = React.useState({resource: undefined, at: '', error: ''});
    const ob = src && src.onboarding;
    const key = src ? [src.app, src.appNamespace, src.cluster, src.state, ob ? [ob.name, ob.namespace, ob.version].join('/') : ''].join('\n') : '';
    React.useEffect(() => {
      if (!src) return undefined;
      let live = true;
      let timer = null;
      let known = src.onboarding;
      const load = () => {
        timer = null;
        readOnboarding(src, known, () => live).then(
          (r) => {
            if (!r) return null;
            known = known || r.ob;
            return {resource: r.resource, at: new Date().toISOString(), error: ''};
          },
          (e) => {
            known = src.onboarding;
            const error = e instanceof Error ? e.message : 'unexpected error';
            return (prev) => Object.assign({}, prev, {error});
          }).then((next) => {
          if (!live || !next) return;
          setRead(next);
          timer = window.setTimeout(load, REFRESH_MS);
        });
      };
      load();
      return () => {
        live = false;
        if (timer !== null) window.clearTimeout(timer);
      };
    }, [key]);
    if (!src) {
      return h('div', {className: 'spokeforge-contracts', style: {padding: '15px'}}, 'This Application manages no spokeforge Onboarding.');
    }
    return h('div', {className: 'spokeforge-contracts-view', style: {padding: '0 15px'}},
      h('div', {className: 'spokeforge-contracts__source', style: {marginTop: '15px', color: '#6D7F8B', ...wrap}},
        'Onboarding managed by Application ', h('b', null, short(src.app)), src.via ? ' (the spoke Application of ' + short(src.via) + ')' : '',
        read.at ? [h('span', {key: 'r'}, ', read '), h('span', {key: 't'}, when(read.at))] : null),
      read.error
        ? h('div', {className: 'spokeforge-contracts__unreadable', style: {marginTop: '10px', color: '#E96D76', ...wrap}}, 'Cannot read the Onboarding: ' + clip(read.error) + '.')
        : null,
      read.at
        ? h(Contracts, {resource: read.resource})
        : read.error ? null : h('div', {className: 'spokeforge-contracts__loading', style: {marginTop: '10px'}}, 'Reading the Onboarding through Argo CD\'s API…'));
  };

  // registerAppViewExtension(component, title, icon, shouldDisplay): without its fourth argument
  // (v3.2 and older) a view would show on every Application; hooks came with React 16.8.
  if (typeof api.registerAppViewExtension === 'function' && api.registerAppViewExtension.length >= 4 &&
    typeof React.useState === 'function' && typeof React.useEffect === 'function' && typeof window.fetch === 'function') {
    api.registerAppViewExtension(AppView, 'Contracts', 'fa-list-ol', shouldDisplay);
  }
})(window);
