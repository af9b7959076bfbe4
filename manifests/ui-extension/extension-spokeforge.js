// spokeforge's Argo CD UI extension: a "Contracts" tab on spokeforge.io/Onboarding resources
// that shows the onboarding boundaries as a ladder, in the order they are established
// (docs/contracts.md), from the status the spokeforge agent writes.
//
// Plain JavaScript, no build step: Argo CD's main bundle sets window.React (React 16) and
// window.extensionsAPI before it loads /extensions.js, the concatenation of every
// extension*.js under /tmp/extensions/ (manifests/ui-extension mounts this file there).
// Every field is optional: an Onboarding the agent never wrote shows "not checked yet".
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
  // The agent's message for a backed-off certificate says "cert-manager retries at <RFC 3339>"
  // (healthchecks/kube.go).
  const nextRetry = (message) => {
    const m = /retries at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)/.exec(message);
    return m ? m[1] : '';
  };
  // Commands in the agent's messages are in backticks: shown as code, so they can be copied.
  const text = (message) =>
    message.split('`').map((part, i) => (i % 2 ? h('code', {key: i, className: 'spokeforge-contracts__command'}, part) : part));

  const wrap = {overflowWrap: 'anywhere', wordBreak: 'break-word', whiteSpace: 'pre-wrap'};
  const badge = (state) => {
    const s = STATES[state];
    return h('span', {className: 'spokeforge-contracts__state', style: {color: s.color, fontWeight: 600, whiteSpace: 'nowrap'}},
      h('i', {className: 'fa ' + s.icon, style: {marginRight: '5px'}}), s.label);
  };

  const FirstFailed = ({boundary, cond, ready}) => {
    const state = stateOf(cond);
    const s = STATES[state];
    const message = str(obj(cond).message);
    const retry = nextRetry(message);
    return h('div', {className: 'spokeforge-contracts__first-failed', 'data-boundary': boundary,
      style: {borderLeft: '6px solid ' + s.color, background: '#fff', padding: '10px 15px', margin: '0 0 15px', boxShadow: '1px 1px 3px rgba(0,0,0,.1)'}},
      h('div', {style: {fontSize: '15px', marginBottom: '5px'}}, badge(state), ' First failed boundary: ', h('b', null, boundary),
        str(obj(cond).reason) ? ' (' + str(obj(cond).reason) + ')' : ''),
      message ? h('div', {className: 'spokeforge-contracts__hint', style: wrap}, text(message)) : null,
      retry ? h('div', {className: 'spokeforge-contracts__next-retry', style: {marginTop: '5px'}}, 'Next automatic retry: ', when(retry)) : null,
      ready ? h('div', {style: {marginTop: '5px', color: '#6D7F8B', ...wrap}}, ready) : null);
  };

  const Row = ({boundary, cond, first}) => {
    const state = stateOf(cond);
    const c = obj(cond);
    const message = str(c.message);
    return h('tr', {className: 'spokeforge-contracts__boundary', 'data-boundary': boundary, 'data-state': state,
      style: {borderLeft: '4px solid ' + STATES[state].color, background: first ? 'rgba(233,109,118,.08)' : undefined, verticalAlign: 'top'}},
      h('td', {style: {padding: '8px', fontWeight: 600}}, boundary),
      h('td', {style: {padding: '8px'}}, badge(state)),
      h('td', {style: {padding: '8px', ...wrap}}, str(c.reason)),
      h('td', {style: {padding: '8px', ...wrap}}, cond ? text(message) : 'not checked yet'),
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
      checked && generation && observed && observed < generation
        ? h('div', {style: {color: '#6D7F8B', marginBottom: '10px'}}, 'Checked against generation ' + observed + ' of the spec; the current one is ' + generation + '.')
        : null,
      firstFailed
        ? h(FirstFailed, {boundary: firstFailed, cond: conds[firstFailed], ready: str(obj(ready).message)})
        : checked && stateOf(ready) === 'holds'
          ? h('div', {className: 'spokeforge-contracts__all-hold', style: {borderLeft: '6px solid ' + STATES.holds.color, background: '#fff', padding: '10px 15px', marginBottom: '15px'}},
            badge('holds'), ' ', str(ready.message) || 'all onboarding contracts hold')
          : null,
      h('table', {className: 'spokeforge-contracts__ladder', style: {width: '100%', tableLayout: 'fixed', borderCollapse: 'collapse', background: '#fff'}},
        h('colgroup', null, h('col', {style: {width: '120px'}}), h('col', {style: {width: '150px'}}), h('col', {style: {width: '190px'}}), h('col', null), h('col', {style: {width: '210px'}})),
        h('thead', null, h('tr', {style: {textAlign: 'left', color: '#6D7F8B', fontSize: '12px', textTransform: 'uppercase'}},
          ['Boundary', 'State', 'Reason', 'Evidence', 'Since'].map((t) => h('th', {key: t, style: {padding: '8px'}}, t)))),
        h('tbody', null, order.map((b) => h(Row, {key: b, boundary: b, cond: conds[b], first: b === firstFailed})))),
      h('div', {className: 'spokeforge-contracts__connected', style: {marginTop: '15px', color: '#6D7F8B'}},
        'Connected: ',
        str(connected.kubernetesVersion) || connected.nodeCount !== undefined
          ? [h('span', {key: 'v'}, 'Kubernetes ' + (str(connected.kubernetesVersion) || '(unknown version)') + ', ' +
              (typeof connected.nodeCount === 'number' ? connected.nodeCount : '?') + ' nodes, read '), h('span', {key: 't'}, when(connected.checkedAt) || 'at an unknown time')]
          : 'not read yet'));
  };

  api.registerResourceExtension(Contracts, 'spokeforge.io', 'Onboarding', 'Contracts', {icon: 'fa-list-ol'});
})(window);
