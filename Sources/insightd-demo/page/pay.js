// The payment page's own script. It starts a capture session as the page loads (the fields
// carry data-insight-field), and on Pay sends the finished interaction to its backend, which
// forwards it to insightd with its server-side key and answers with the decision.
'use strict';

const session = InsightCapture.start();
const form = document.getElementById('payment');
const result = document.getElementById('result');

/** The amount's band for this service: the page reads the amount, the kit never does. */
function amountBand() {
  const amount = Number(document.getElementById('amount').value.replace(',', '.'));
  if (!(amount >= 0) || amount < 100) return 'low';
  return amount < 1000 ? 'medium' : 'high';
}

const MESSAGES = {
  proceed: ['Payment sent', 'Nothing in this session suggests that someone is telling you what to do.'],
  confirm: ['Please confirm', 'Is someone on the phone telling you what to do? Banks never ask you to move money.'],
  confirmOutOfBand: ['We will call you', 'Before this payment leaves, we will call you back on the number we have for you.'],
  block: ['Payment held', 'This payment is on hold. Our fraud team will contact you.'],
  error: ['Something went wrong', 'The payment was not sent.'],
};

function show(action, details) {
  const [title, explanation] = MESSAGES[action] || MESSAGES.error;
  document.getElementById('decision').textContent = title;
  document.getElementById('explanation').textContent = explanation;
  document.getElementById('details').textContent = details;
  result.dataset.action = action;
  result.hidden = false;
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  document.getElementById('pay').disabled = true;
  const body = {
    amountBand: amountBand(),
    newPayee: document.getElementById('new-payee').checked,
    interaction: session.finish(),
  };
  try {
    const response = await fetch('api/payments', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    });
    const answer = await response.json();
    if (!response.ok) {
      show('error', answer.error || `HTTP ${response.status}`);
      return;
    }
    show(answer.action, `isLikelyBeingCoached: ${answer.coaching}` +
      (answer.reasons.length ? ` (${answer.reasons.join(', ')})` : '') +
      ` · decision ${answer.action} · consumption reported: ${answer.consumption}`);
  } catch (error) {
    show('error', 'The payment service did not answer.');
  }
});

document.getElementById('again').addEventListener('click', () => location.reload());
