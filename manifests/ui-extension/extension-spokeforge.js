// spokeforge's Argo CD UI extension: a "Contracts" tab on spokeforge.io/Onboarding resources
// that shows the onboarding boundaries as a ladder, in the order they are established
// (docs/contracts.md), from the status the spokeforge agent writes.
//
// Plain JavaScript, no build step: Argo CD's main bundle sets window.React (React 16) and
// window.extensionsAPI before it loads /extensions.js, the concatenation of every
// extension*.js under /tmp/extensions/ (manifests/ui-extension mounts this file there).
// Every field is optional: an Onboarding the agent never wrote shows "not checked yet", and one
// written by an agent without status.boundaries shows each condition's message as its evidence.
((window) => {
  const React = window.React;
  const api = window.extensionsAPI;
  if (!React || !api || typeof api.registerResourceExtension !== 'function') {
    return; // not inside the Argo CD UI
  }
  const h = React.createElement;

  const BOUNDARIES = ['Identity', 'Secrets', 'Certificates', 'Registry', 'Queues', 'Storage', 'Workload'];
  // Argo CD's health colours and icons (ui/src/app/shared/components/colors.ts, HealthStatusIcon).
  const STATES = {
    holds: {label: 'Holds', color: '#18BE94', icon: 'fa-heart'},
    failed: {label: 'Failed', color: '#E96D76', icon: 'fa-heart-broken'},
    pending: {label: 'Pending', color: '#0DADEA', icon: 'fa-circle-notch'},
    unknown: {label: 'Not checked', color: '#CCD6DD', icon: 'fa-question-circle'},
    unchecked: {label: 'Not checked yet', color: '#CCD6DD', icon: 'fa-question-circle'},
  };

  const str = (v) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
  const obj = (v) => (v && typeof v === 'object' && !Array.isArray(v) ? v : {});
  const arr = (v) => (Array.isArray(v) ? v : []);

  // Condition status and severity (healthchecks/status.go): True holds; False with severity
  // Warning is pending (being retried); other False failed; Unknown was not checked.
  const stateOf = (c) => {
    if (!c) return 'unchecked';
    const status = str(c.status);
    if (status === 'True') return 'holds';
    if (status === 'False') return str(c.severity) === 'Warning' ? 'pending' : 'failed';
    return 'unknown';
  };

  const parseTime = (v) => {
    const t = Date.parse(str(v));
    return isNaN(t) ? null : new Date(t);
  };
  const relative = (d) => {
    const s = Math.round((d.getTime() - Date.now()) / 1000);
    const a = Math.abs(s);
    const n = a < 90 ? a + 's' : a < 5400 ? Math.round(a / 60) + 'm' : a < 129600 ? Math.round(a / 3600) + 'h' : Math.round(a / 86400) + 'd';
    return s < 0 ? n + ' ago' : 'in ' + n;
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
    const at = obj(bs).nextRetryTime;
    // Only a date-time string: Date.parse would read a number as a year.
    if (typeof at === 'string' && new RegExp('^' + RFC3339 + '$').test(at) && parseTime(at)) return {at, source: 'status'};
    const m = new RegExp('retries at (' + RFC3339 + ')').exec(message);
    return m ? {at: m[1], source: 'message'} : null;
  };
  // status.boundaries[].evidence (healthchecks/status.go): the items naming a check; [] when absent.
  const evidenceOf = (bs) => arr(obj(bs).evidence).map(obj).filter((e) => str(e.check));
  const RESULTS = {Passed: 'holds', Failed: 'failed', Pending: 'pending', NotChecked: 'unknown'};
  // Commands in the agent's messages are in backticks: shown as code, so they can be copied.
  const text = (message) =>
    message.split('`').map((part, i) => (i % 2 ? h('code', {key: i, className: 'spokeforge-contracts__command'}, part) : part));

  const wrap = {overflowWrap: 'anywhere', wordBreak: 'break-word', whiteSpace: 'pre-wrap'};
  const badge = (state) => {
    const s = STATES[state];
    return h('span', {className: 'spokeforge-contracts__state', style: {color: s.color, fontWeight: 600, whiteSpace: 'nowrap'}},
      h('i', {className: 'fa ' + s.icon, style: {marginRight: '5px'}}), s.label);
  };

  const Evidence = ({items, omitted}) =>
    h('ul', {className: 'spokeforge-contracts__evidence', style: {margin: 0, padding: 0, listStyle: 'none'}},
      items.map((e, i) => {
        const s = STATES[RESULTS[str(e.result)] || 'unknown'];
        return h('li', {key: i, className: 'spokeforge-contracts__evidence-item', 'data-result': str(e.result), style: {marginBottom: '3px', ...wrap}},
          h('i', {className: 'fa ' + s.icon, title: s.label, style: {color: s.color, marginRight: '5px'}}),
          h('b', null, str(e.check)), str(e.detail) ? ': ' : '', text(str(e.detail)));
      }),
      omitted > 0 ? h('li', {key: 'omitted', style: {color: '#6D7F8B'}}, 'and ' + omitted + ' more') : null);

  const Retry = ({className, retry}) =>
    h('div', {className, 'data-source': retry.source, style: {marginTop: '5px'}}, 'Next automatic retry: ', when(retry.at));

  const FirstFailed = ({boundary, cond, bs, ready}) => {
    const state = stateOf(cond);
    const s = STATES[state];
    const message = str(obj(cond).message);
    const retry = nextRetry(bs, message);
    return h('div', {className: 'spokeforge-contracts__first-failed', 'data-boundary': boundary,
      style: {borderLeft: '6px solid ' + s.color, background: '#fff', padding: '10px 15px', margin: '0 0 15px', boxShadow: '1px 1px 3px rgba(0,0,0,.1)'}},
      h('div', {style: {fontSize: '15px', marginBottom: '5px'}}, badge(state), ' First failed boundary: ', h('b', null, boundary),
        str(obj(cond).reason) ? ' (' + str(obj(cond).reason) + ')' : ''),
      message ? h('div', {className: 'spokeforge-contracts__hint', style: wrap}, text(message)) : null,
      retry ? h(Retry, {className: 'spokeforge-contracts__next-retry', retry}) : null,
      ready ? h('div', {style: {marginTop: '5px', color: '#6D7F8B', ...wrap}}, ready) : null);
  };

  const Row = ({boundary, cond, bs, first}) => {
    const state = stateOf(cond);
    const c = obj(cond);
    const message = str(c.message);
    const items = evidenceOf(bs);
    // The first failed boundary's retry is in the box above the ladder.
    const retry = cond && !first ? nextRetry(bs, message) : null;
    return h('tr', {className: 'spokeforge-contracts__boundary', 'data-boundary': boundary, 'data-state': state,
      style: {borderLeft: '4px solid ' + STATES[state].color, background: first ? 'rgba(233,109,118,.08)' : undefined, verticalAlign: 'top'}},
      h('td', {style: {padding: '8px', fontWeight: 600}}, boundary),
      h('td', {style: {padding: '8px'}}, badge(state)),
      h('td', {style: {padding: '8px', ...wrap}}, str(c.reason)),
      h('td', {style: {padding: '8px', ...wrap}},
        !cond ? 'not checked yet' : items.length ? h(Evidence, {items, omitted: Number(obj(bs).evidenceOmitted) || 0}) : text(message),
        retry ? h(Retry, {className: 'spokeforge-contracts__row-retry', retry}) : null),
      h('td', {style: {padding: '8px', fontSize: '12px'}}, when(c.lastTransitionTime)));
  };

  const Contracts = (props) => {
    const res = obj(props && props.resource);
    const meta = obj(res.metadata);
    const spec = obj(res.spec);
    const status = obj(res.status);
    const conds = {};
    arr(status.conditions).forEach((c) => {
      if (str(obj(c).type)) conds[str(c.type)] = c;
    });
    const boundaries = {};
    arr(status.boundaries).forEach((b) => {
      if (str(obj(b).name)) boundaries[str(b.name)] = b;
    });
    const declared = arr(spec.boundaries).filter((b) => typeof b === 'string' && b);
    const order = declared.length ? declared : BOUNDARIES;
    const checked = Object.keys(conds).length > 0 || parseTime(status.checkedAt);
    const firstFailed = str(status.firstFailedBoundary);
    const ready = conds.Ready;
    const connected = obj(status.connected);
    const generation = Number(meta.generation) || 0;
    const observed = Number(status.observedGeneration) || 0;

    return h('div', {className: 'spokeforge-contracts', style: {padding: '15px 0'}},
      h('div', {className: 'spokeforge-contracts__summary', style: {marginBottom: '10px'}},
        h('span', {style: {fontSize: '16px', marginRight: '10px'}}, 'Onboarding ', h('b', null, str(meta.name) || '?')),
        checked
          ? h('span', null, 'last checked ', when(status.checkedAt) || 'at an unknown time')
          : h('span', {className: 'spokeforge-contracts__unchecked'}, 'Not checked yet: the spokeforge agent in the spoke has not written this status.')),
      spec.stabilization === true
        ? h('div', {className: 'spokeforge-contracts__stabilization', style: {marginBottom: '10px', color: '#6D7F8B'}},
          h('i', {className: 'fa fa-pause-circle', style: {marginRight: '5px'}}),
          'Stabilization: workload Applications are delivered without automated sync; each sync is started by hand.')
        : null,
      checked && generation && observed && observed < generation
        ? h('div', {style: {color: '#6D7F8B', marginBottom: '10px'}}, 'Checked against generation ' + observed + ' of the spec; the current one is ' + generation + '.')
        : null,
      firstFailed
        ? h(FirstFailed, {boundary: firstFailed, cond: conds[firstFailed], bs: boundaries[firstFailed], ready: str(obj(ready).message)})
        : checked && stateOf(ready) === 'holds'
          ? h('div', {className: 'spokeforge-contracts__all-hold', style: {borderLeft: '6px solid ' + STATES.holds.color, background: '#fff', padding: '10px 15px', marginBottom: '15px'}},
            badge('holds'), ' ', str(ready.message) || 'all onboarding contracts hold')
          : null,
      h('table', {className: 'spokeforge-contracts__ladder', style: {width: '100%', tableLayout: 'fixed', borderCollapse: 'collapse', background: '#fff'}},
        h('colgroup', null, h('col', {style: {width: '120px'}}), h('col', {style: {width: '150px'}}), h('col', {style: {width: '190px'}}), h('col', null), h('col', {style: {width: '210px'}})),
        h('thead', null, h('tr', {style: {textAlign: 'left', color: '#6D7F8B', fontSize: '12px', textTransform: 'uppercase'}},
          ['Boundary', 'State', 'Reason', 'Evidence', 'Since'].map((t) => h('th', {key: t, style: {padding: '8px'}}, t)))),
        h('tbody', null, order.map((b) => h(Row, {key: b, boundary: b, cond: conds[b], bs: boundaries[b], first: b === firstFailed})))),
      h('div', {className: 'spokeforge-contracts__connected', style: {marginTop: '15px', color: '#6D7F8B'}},
        'Connected: ',
        str(connected.kubernetesVersion) || connected.nodeCount !== undefined
          ? [h('span', {key: 'v'}, 'Kubernetes ' + (str(connected.kubernetesVersion) || '(unknown version)') + ', ' +
              (typeof connected.nodeCount === 'number' ? connected.nodeCount : '?') + ' nodes, read '), h('span', {key: 't'}, when(connected.checkedAt) || 'at an unknown time')]
          : 'not read yet'));
  };

  api.registerResourceExtension(Contracts, 'spokeforge.io', 'Onboarding', 'Contracts', {icon: 'fa-list-ol'});
})(window);
