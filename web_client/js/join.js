// The join page at /join (?code= fills the code, as the dashboard's QR code does): the class
// code, which names the class and offers only its scenes, a group name, and the experiment →
// POST /api/join → straight to the group's experiment, its token in the fragment.
import { errorText } from './api.js';
import { sceneName, t } from './i18n.js';
import { normalCode, onNode } from './node.js';

const $ = (s) => document.getElementById(s);

const query = new URLSearchParams(location.search);
if (query.get('code')) $('code').value = query.get('code');

function refuse(text, code = '') {
  $('refusal').textContent = text;
  $('refusal').hidden = !text;
  $('refusal').dataset.code = code;
}

// A code of the right shape (six characters, in a cluster after its node): worth asking about.
const CODE = /^([a-z][a-z0-9]{0,7}-)?[A-Z0-9]{6}$/;
let looked = null;

// The class of the code typed: its name shown, its scenes offered (the first is where groups
// start; one scene needs no choice). A wrong code is said at once.
async function lookUp() {
  const code = normalCode($('code').value);
  if (code === looked) return;
  looked = code;
  $('class-name').hidden = true;
  $('scene-row').hidden = true;
  $('scene').replaceChildren();
  if (!CODE.test(code)) return;
  let r, json = null;
  try {
    r = await fetch(onNode(code, `/api/join?code=${encodeURIComponent(code)}`));
    json = await r.json().catch(() => null);
  } catch (e) {
    refuse(t('error.unreachable'));
    return;
  }
  if (code !== looked) return; // typed on since
  if (!r.ok) {
    refuse(errorText(r.status, json && json.error), json && json.error ? json.error.code : String(r.status));
    return;
  }
  refuse('');
  $('class-name').textContent = t(json.state === 'ended' ? 'join.class_ended' : 'join.class_is', { name: json.name });
  $('class-name').hidden = false;
  $('scene').replaceChildren(...json.scenes.map((s) => new Option(sceneName(s), s)));
  $('scene-row').hidden = json.scenes.length < 2;
}

// The group's experiment: its token in the fragment (never sent to a server), with the class and
// group its page shows.
function experiment(reply) {
  const f = new URLSearchParams();
  if (reply.control_token) f.set('control', reply.control_token);
  else if (reply.viewer_token) f.set('view', reply.viewer_token);
  f.set('class', reply.class.id);
  f.set('group', reply.group);
  return `/s/${encodeURIComponent(reply.session.id)}#${f.toString()}`;
}

$('code').addEventListener('input', () => lookUp());
// One join per press: a double tap joined twice, and the group's second join (a watcher's link,
// where the class gives its later students that) could be the page the student landed on.
let joining = false;
const button = $('join').querySelector('button');
$('join').addEventListener('submit', async (e) => {
  e.preventDefault();
  if (joining) return;
  joining = button.disabled = true;
  let leaving = false;
  try {
    leaving = await join();
  } finally {
    // on its way to the experiment, the form stays shut
    if (!leaving) joining = button.disabled = false;
  }
});
// back from the experiment, the page may be the one kept as it was left: open again
window.addEventListener('pageshow', (e) => { if (e.persisted) joining = button.disabled = false; });

async function join() {
  refuse('');
  const body = { code: normalCode($('code').value), group: $('group').value.trim() };
  if (!body.code) { refuse(t('join.need_code')); $('code').focus(); return; }
  if (!body.group) { refuse(t('join.need_group')); $('group').focus(); return; }
  if ($('scene').value) body.scene = $('scene').value;
  let response, json = null;
  try {
    // a class lives on one node: its join goes there (the code names it)
    response = await fetch(onNode(body.code, '/api/join'), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    json = await response.json().catch(() => null);
  } catch (err) {
    refuse(t('error.unreachable'));
    return;
  }
  if (!response.ok) {
    const err = json && json.error;
    refuse(errorText(response.status, err), err ? err.code : String(response.status));
    return;
  }
  location.assign(experiment(json));
  return true;
}

lookUp();
