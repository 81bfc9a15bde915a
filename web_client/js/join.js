// The join page at /join (?code= fills the code): a class code, a group name and the
// experiment → POST /api/join → the student's class page, the group's token in its fragment.
// A refusal (wrong code, class full or ended, a scene the class does not allow) is shown as the
// API words it.
import { normalCode, onNode } from './node.js';

const $ = (s) => document.getElementById(s);

const query = new URLSearchParams(location.search);
if (query.get('code')) $('code').value = query.get('code');

function refuse(text) {
  $('refusal').textContent = text;
  $('refusal').hidden = !text;
}

// The experiments: the catalogue's scenes until a reply names the class's own.
async function scenes() {
  try {
    const { scenes: list } = await (await fetch('/api/scenes')).json();
    offer(list.map((s) => s.name));
  } catch (e) { /* the class's first scene is still offered */ }
}
function offer(names) {
  const keep = $('scene').value;
  $('scene').innerHTML = '<option value="">the class\'s first one</option>' +
    names.map((n) => `<option>${n.replace(/[^a-z0-9_]/gi, '')}</option>`).join('');
  if (names.includes(keep)) $('scene').value = keep;
}

// The student page's address: its group and token travel in the fragment (never sent to a server).
function studentPage(reply) {
  const f = new URLSearchParams({ group: reply.group });
  if (reply.control_token) f.set('control', reply.control_token);
  else if (reply.viewer_token) f.set('viewer', reply.viewer_token);
  return `/class/${encodeURIComponent(reply.class.id)}#${f.toString()}`;
}

$('join').addEventListener('submit', async (e) => {
  e.preventDefault();
  refuse('');
  // the group name goes as typed: a space at either end is the API's to refuse, not ours to drop
  const body = { code: normalCode($('code').value), group: $('group').value };
  if ($('scene').value) body.scene = $('scene').value;
  let response, json = null;
  try {
    // a class lives on one node: its join goes there (the code names it)
    response = await fetch(onNode(body.code, '/api/join'), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    json = await response.json().catch(() => null);
  } catch (err) {
    refuse(`The server cannot be reached (${err.message}).`);
    return;
  }
  if (!response.ok) {
    const err = json && json.error;
    refuse(err ? `${err.message}${err.field ? ` (${err.field})` : ''}` : `Refused: ${response.status}`);
    $('refusal').dataset.code = err ? err.code : String(response.status);
    if (json && json.class && Array.isArray(json.class.scenes)) offer(json.class.scenes);
    return;
  }
  location.assign(studentPage(json));
});
scenes();
