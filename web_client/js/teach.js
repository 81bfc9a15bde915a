// The teacher's form for a new class (POST /api/classes): the scenes come from the catalogue, the
// end time from the teacher's clock; the reply's teacher token goes into the dashboard's link.
import { api, clearError, showError } from './api.js';

const $ = (id) => document.getElementById(id);

function pad(n) { return String(n).padStart(2, '0'); }

// datetime-local wants local time without a zone
function localInput(date) {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

// The link grainlabd prints on start carries the teacher token in its fragment (never sent to the
// server in a URL, never in its logs): the form then asks for nothing the teacher has not got.
function tokenFromLink() {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  if (!token) return;
  $('token').value = token;
  $('token-row').hidden = true;
}

async function main() {
  tokenFromLink();
  const catalogue = await api('GET', '/api/scenes');
  for (const [i, s] of catalogue.scenes.entries()) {
    const label = document.createElement('label');
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.value = s.name;
    box.checked = i === 0 || s.name === 'silo';
    box.dataset.scene = s.name;
    label.append(box, ` ${s.name}`);
    $('scenes').append(label);
  }
  $('ends').value = localInput(new Date(Date.now() + 2 * 3600 * 1000));
  $('create').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const scenes = [...$('scenes').querySelectorAll('input:checked')].map((b) => b.value);
    const ends = new Date($('ends').value);
    if (Number.isNaN(ends.getTime())) {
      showError('the end time is not a time');
      return;
    }
    const body = {
      name: $('name').value,
      scenes,
      max_groups: Number($('groups').value),
      grain_budget: Number($('budget').value),
      ends_at: ends.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      private: $('private').checked,
      second_join: $('second').value,
    };
    clearError();
    const made = await api('POST', '/api/classes', body, $('token').value);
    clearError();
    const link = `${location.origin}/class/${made.id}#teacher=${made.teacher_token}`;
    $('join-url').textContent = `${location.origin}/join`;
    $('code').textContent = made.code;
    $('dashboard').href = link;
    $('dashboard').textContent = link;
    $('made').hidden = false;
    $('create').hidden = true;
    document.body.dataset.classId = made.id;
  });
}

main().catch((e) => showError(e.message));
