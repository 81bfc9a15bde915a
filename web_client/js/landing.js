// The landing page: a card per scene (from the catalogue) to start a session, the share links of
// a new session, joining by code, and the live sessions with their viewer counts.
import { api, esc, fmt, labelCells } from './api.js';
import { sceneName, t } from './i18n.js';
import { normalCode } from './node.js';

const $ = (s) => document.getElementById(s);

async function scenes() {
  const { scenes } = await api('GET', '/api/scenes');
  const box = $('scenes');
  for (const s of scenes) {
    const card = document.createElement('div');
    card.className = 'card';
    card.innerHTML = '<h3></h3><p></p><div class="row"><input maxlength="63"><button></button></div>';
    card.querySelector('h3').textContent = sceneName(s.name);
    card.querySelector('p').textContent = t(`scene.${s.name}.about`);
    const label = card.querySelector('input');
    label.placeholder = t('landing.label_placeholder');
    label.setAttribute('aria-label', t('landing.label_for', { scene: sceneName(s.name) }));
    const button = card.querySelector('button');
    button.textContent = t('landing.start_button');
    button.dataset.scene = s.name;
    card.querySelector('button').addEventListener('click', () => create(s.name, label.value));
    box.appendChild(card);
  }
}

async function create(scene, label) {
  const body = { scene };
  if (label) body.label = label;
  const s = await api('POST', '/api/sessions', body);
  // the token travels in the fragment: browsers never send it to any server
  const control = `${location.origin}/s/${s.id}#control=${s.control_token}`;
  const viewer = `${location.origin}/s/${s.id}`;
  $('control-link').href = $('control-link').textContent = control;
  $('viewer-link').href = $('viewer-link').textContent = viewer;
  $('join-code').textContent = s.join_code;
  $('created').hidden = false;
  location.assign(control);
}

// Every node's live sessions: in a cluster each node is asked at /n/{node}/ through the router
// (a node that does not answer is left out of this refresh); a lone server is asked directly.
async function allSessions() {
  const { nodes } = await api('GET', '/api/nodes');
  if (nodes.length < 2) return (await api('GET', '/api/sessions')).sessions;
  const lists = await Promise.all(nodes.map((n) =>
    fetch(`/n/${n.node}/api/sessions`).then((r) => (r.ok ? r.json() : { sessions: [] }))
      .catch(() => ({ sessions: [] }))));
  return lists.flatMap((l) => l.sessions);
}

async function sessions() {
  const sessions = await allSessions();
  $('sessions').innerHTML = sessions.map((s) =>
    `<tr><td>${esc(sceneName(s.scene))}</td><td>${esc(s.label)}</td><td>${esc(t(`state.${s.state}`))}</td><td>${fmt(s.t, 3)}</td>` +
    `<td>${s.viewers}</td><td><a href="/s/${encodeURIComponent(s.id)}">${esc(t('landing.watch'))}</a></td></tr>`).join('');
  labelCells($('sessions-table'));
}

$('join').addEventListener('submit', (e) => {
  e.preventDefault();
  const code = normalCode($('code').value);
  if (code) location.assign(`/s/${encodeURIComponent(code)}`);
});
scenes();
sessions();
setInterval(() => sessions().catch(() => {}), 2000);
