'use strict';
// check.js runs the flows of an app built on @solana/web3.js 1.x against a
// running tpu (`tpu run --no-gen`), one check after another, and prints
// one line per check: "ok   <name>  <what it saw>" or
// "FAIL <name>  <why>". It exits 0 only if every check passed, 1 if one
// failed, 2 on a bad argument or when the whole run overran its deadline.
//
//   RPC_URL=http://127.0.0.1:8899 WS_URL=ws://127.0.0.1:8900 node check.js [check ...]
//
// RPC_URL defaults to http://127.0.0.1:8899; without WS_URL, web3.js
// looks for the websocket PubSub at the RPC port + 1. Named checks run
// alone (in the order of CHECKS); none names all of them. Each check
// gets STEP_TIMEOUT_MS (30 s) and the whole run DEADLINE_MS (180 s).
// cmd/tpu TestJSClient runs this script against a tpu it starts.

const web3 = require('@solana/web3.js');
const assert = require('node:assert/strict');

const RPC_URL = process.env.RPC_URL || 'http://127.0.0.1:8899';
const WS_URL = process.env.WS_URL || undefined;
const STEP_MS = Number(process.env.STEP_TIMEOUT_MS || 30_000);
const DEADLINE_MS = Number(process.env.DEADLINE_MS || 180_000);

const SYSTEM = web3.SystemProgram.programId.toBase58();
const AIRDROP = 2 * web3.LAMPORTS_PER_SOL;

const conn = new web3.Connection(RPC_URL, {
  commitment: 'confirmed',
  wsEndpoint: WS_URL,
  disableRetryOnRateLimit: true,
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// within rejects with a clear message if p has not settled in ms.
function within(ms, what, p) {
  let timer;
  const t = new Promise((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// confirmed polls getSignatureStatuses (no websocket) until sig is
// confirmed or finalized, and fails if it failed or never lands.
async function confirmed(sig, ms = 20_000) {
  const end = Date.now() + ms;
  for (;;) {
    const { value: [st] } = await conn.getSignatureStatuses([sig]);
    if (st && (st.confirmationStatus === 'confirmed' || st.confirmationStatus === 'finalized')) {
      if (st.err) throw new Error(`${sig} landed with an error: ${JSON.stringify(st.err)}`);
      return st;
    }
    if (Date.now() > end) throw new Error(`${sig} not confirmed within ${ms} ms (last status ${JSON.stringify(st)})`);
    await sleep(100);
  }
}

// The state checks share, made on first use so that any check can run
// alone: a funded payer and a transfer of its.
const state = {};

// payer returns a fresh keypair funded by requestAirdrop, confirmed by
// polling; the airdrop check makes it.
async function payer() {
  if (!state.payer) {
    const kp = web3.Keypair.generate();
    const t0 = Date.now();
    const sig = await conn.requestAirdrop(kp.publicKey, AIRDROP);
    await confirmed(sig);
    state.payer = kp;
    state.airdropSig = sig;
    state.airdropMs = Date.now() - t0;
  }
  return state.payer;
}

// transferTx is a signed transfer of lamports from `from` to `to`.
async function transferTx(from, to, lamports) {
  const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
  const tx = new web3.Transaction({ feePayer: from.publicKey, blockhash, lastValidBlockHeight }).add(
    web3.SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: to, lamports }),
  );
  tx.sign(from);
  return tx;
}

// fee is what the bank charges for tx's message (getFeeForMessage).
async function fee(tx) {
  const { value } = await conn.getFeeForMessage(tx.compileMessage());
  if (typeof value !== 'number') throw new Error(`getFeeForMessage: ${JSON.stringify(value)}`);
  return value;
}

// transfer sends lamports from the payer to a fresh account with
// sendRawTransaction (skipPreflight) and confirms it by polling; the
// transfer check makes it, getTransaction and getSignaturesForAddress
// read it.
async function transfer() {
  if (!state.transfer) {
    const from = await payer();
    const to = web3.Keypair.generate().publicKey;
    const lamports = 1_000_000;
    const before = await conn.getBalance(from.publicKey);
    const tx = await transferTx(from, to, lamports);
    const f = await fee(tx);
    const sig = await conn.sendRawTransaction(tx.serialize(), { skipPreflight: true });
    const st = await confirmed(sig);
    state.transfer = { sig, to, lamports, fee: f, before, slot: st.slot };
  }
  return state.transfer;
}

// balances asserts the payer paid lamports + fee since `before` and the
// recipient holds lamports.
async function balances(from, before, to, lamports, f) {
  const [after, got] = await Promise.all([conn.getBalance(from), conn.getBalance(to)]);
  assert.equal(got, lamports, `recipient balance`);
  assert.equal(after, before - lamports - f, `payer balance: ${before} - ${lamports} - fee ${f}`);
  return `payer ${before} -> ${after} (fee ${f}), recipient ${got}`;
}

// failingTx is a transfer of more than the payer holds: the System
// program fails it with custom error 1 (ResultWithNegativeLamports).
async function failingTx() {
  const from = await payer();
  const have = await conn.getBalance(from.publicKey);
  return transferTx(from, web3.Keypair.generate().publicKey, have * 10);
}

// systemFailed asserts the logs of a failed System transfer.
function systemFailed(logs) {
  assert.ok(Array.isArray(logs) && logs.length > 0, `logs: ${JSON.stringify(logs)}`);
  assert.ok(logs.includes(`Program ${SYSTEM} invoke [1]`), `no "invoke [1]" in logs ${JSON.stringify(logs)}`);
  assert.ok(
    logs.includes(`Program ${SYSTEM} failed: custom program error: 0x1`),
    `no "failed: custom program error: 0x1" in logs ${JSON.stringify(logs)}`,
  );
}

const CHECKS = [
  ['airdrop', async () => {
    const kp = await payer();
    const bal = await conn.getBalance(kp.publicKey);
    assert.equal(bal, AIRDROP, 'balance after the airdrop');
    return `${AIRDROP} lamports to ${kp.publicKey.toBase58()}, confirmed by polling in ${state.airdropMs} ms`;
  }],

  ['transfer', async () => {
    const t = await transfer();
    const from = (await payer()).publicKey;
    return `sendRawTransaction (skipPreflight) confirmed by polling in slot ${t.slot}; ` +
      (await balances(from, t.before, t.to, t.lamports, t.fee));
  }],

  ['sendAndConfirmTransaction', async () => {
    const from = await payer();
    const to = web3.Keypair.generate().publicKey;
    const lamports = 2_000_000;
    const before = await conn.getBalance(from.publicKey);
    const tx = new web3.Transaction().add(
      web3.SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: to, lamports }),
    );
    const t0 = Date.now();
    const sig = await web3.sendAndConfirmTransaction(conn, tx, [from], { commitment: 'confirmed' });
    const ms = Date.now() - t0;
    state.confirmedSig = sig;
    return `${sig.slice(0, 12)}... confirmed in ${ms} ms; ` +
      (await balances(from.publicKey, before, to, lamports, await fee(tx)));
  }],

  ['confirmTransaction', async () => {
    const from = await payer();
    const to = web3.Keypair.generate().publicKey;
    const tx = await transferTx(from, to, 3_000_000);
    const signature = await conn.sendRawTransaction(tx.serialize());
    const t0 = Date.now();
    const res = await conn.confirmTransaction(
      { signature, blockhash: tx.recentBlockhash, lastValidBlockHeight: tx.lastValidBlockHeight },
      'confirmed',
    );
    assert.equal(res.value.err, null, `confirmTransaction: ${JSON.stringify(res.value)}`);
    assert.ok(res.context.slot > 0, `context.slot ${res.context.slot}`);
    assert.equal(await conn.getBalance(to), 3_000_000, 'recipient balance');
    return `{signature, blockhash, lastValidBlockHeight: ${tx.lastValidBlockHeight}} confirmed in ${Date.now() - t0} ms at slot ${res.context.slot}`;
  }],

  ['onAccountChange', async () => {
    const from = await payer();
    const to = web3.Keypair.generate().publicKey;
    let got;
    const seen = new Promise((r) => { got = r; });
    const id = conn.onAccountChange(to, (info, ctx) => got({ info, ctx }), { commitment: 'confirmed' });
    // web3.js sends its subscribe requests in the order they were made,
    // on one socket: once a slot notification comes, the account
    // subscription (asked first) is in place and the transfer will be
    // seen.
    let live;
    const ready = new Promise((r) => { live = r; });
    const slotId = conn.onSlotChange(() => live());
    try {
      await within(STEP_MS / 2, 'the first slot notification (websocket)', ready);
      const tx = await transferTx(from, to, 4_000_000);
      await conn.sendRawTransaction(tx.serialize(), { skipPreflight: true });
      const { info, ctx } = await within(STEP_MS / 2, 'accountNotification', seen);
      assert.equal(info.lamports, 4_000_000, 'lamports notified');
      assert.equal(info.owner.toBase58(), SYSTEM, 'owner notified');
      assert.ok(ctx.slot > 0, `context.slot ${ctx.slot}`);
      return `${to.toBase58().slice(0, 8)}... notified at slot ${ctx.slot}: ${info.lamports} lamports, owner System`;
    } finally {
      await conn.removeAccountChangeListener(id);
      await conn.removeSlotChangeListener(slotId);
    }
  }],

  ['onSlotChange', async () => {
    const slots = [];
    let done;
    const three = new Promise((r) => { done = r; });
    const id = conn.onSlotChange((s) => {
      slots.push(s);
      if (slots.length === 3) done();
    });
    try {
      await within(STEP_MS, 'three slot notifications', three);
    } finally {
      await conn.removeSlotChangeListener(id);
    }
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      assert.ok(s.parent < s.slot && s.root <= s.slot, `slot notification ${JSON.stringify(s)}`);
      if (i > 0) assert.ok(s.slot > slots[i - 1].slot, `slots out of order: ${JSON.stringify(slots)}`);
    }
    return `slots ${slots.map((s) => s.slot).join(', ')} (parent, root: ${slots.map((s) => `${s.parent}/${s.root}`).join(', ')})`;
  }],

  ['simulateTransaction', async () => {
    const tx = await failingTx();
    const { value } = await conn.simulateTransaction(tx);
    assert.deepEqual(value.err, { InstructionError: [0, { Custom: 1 }] }, `err ${JSON.stringify(value.err)}`);
    systemFailed(value.logs);
    assert.equal(typeof value.unitsConsumed, 'number', `unitsConsumed ${value.unitsConsumed}`);
    return `err ${JSON.stringify(value.err)}, unitsConsumed ${value.unitsConsumed}, logs ${JSON.stringify(value.logs)}`;
  }],

  ['preflight', async () => {
    const tx = await failingTx();
    let err;
    try {
      const sig = await conn.sendRawTransaction(tx.serialize());
      throw new Error(`sendTransaction of an overdrawing transfer answered a signature ${sig}, not a preflight failure`);
    } catch (e) {
      if (!(e instanceof web3.SendTransactionError)) throw e;
      err = e;
    }
    assert.match(err.message, /Transaction simulation failed/, 'message');
    const logs = await err.getLogs(conn);
    systemFailed(logs);
    return `SendTransactionError: ${err.transactionError.message.split('\n')[0]}; ${logs.length} log lines`;
  }],

  ['getTransaction', async () => {
    const t = await transfer();
    const from = (await payer()).publicKey;
    const tx = await conn.getTransaction(t.sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    assert.ok(tx, `getTransaction(${t.sig}) is null`);
    assert.equal(tx.slot, t.slot, 'slot');
    assert.equal(tx.transaction.signatures[0], t.sig, 'signature');
    const keys = tx.transaction.message.staticAccountKeys.map((k) => k.toBase58());
    assert.deepEqual(keys, [from.toBase58(), t.to.toBase58(), SYSTEM], 'account keys');
    const m = tx.meta;
    assert.equal(m.err, null, 'meta.err');
    assert.equal(m.fee, t.fee, 'meta.fee');
    assert.deepEqual(m.preBalances.slice(0, 2), [t.before, 0], 'meta.preBalances of payer, recipient');
    assert.deepEqual(m.postBalances.slice(0, 2), [t.before - t.lamports - t.fee, t.lamports], 'meta.postBalances of payer, recipient');
    assert.equal(m.preBalances[2], m.postBalances[2], 'the System program\'s balance changed');
    assert.ok(Array.isArray(m.logMessages) && m.logMessages.includes(`Program ${SYSTEM} success`),
      `meta.logMessages ${JSON.stringify(m.logMessages)}`);
    return `slot ${tx.slot}, fee ${m.fee}, balances ${JSON.stringify(m.preBalances)} -> ${JSON.stringify(m.postBalances)}, ` +
      `${m.computeUnitsConsumed} CU, logs ${JSON.stringify(m.logMessages)}`;
  }],

  ['getParsedTransaction', async () => {
    const t = await transfer();
    const from = (await payer()).publicKey;
    const tx = await conn.getParsedTransaction(t.sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    assert.ok(tx, `getParsedTransaction(${t.sig}) is null`);
    const keys = tx.transaction.message.accountKeys.map((k) => [k.pubkey.toBase58(), k.signer, k.writable]);
    assert.deepEqual(keys, [[from.toBase58(), true, true], [t.to.toBase58(), false, true], [SYSTEM, false, false]], 'accountKeys');
    const [ix] = tx.transaction.message.instructions;
    assert.equal(ix.program, 'system', `program of ${JSON.stringify(ix)}`);
    assert.equal(ix.programId.toBase58(), SYSTEM, 'programId');
    assert.deepEqual(ix.parsed, {
      type: 'transfer',
      info: { source: from.toBase58(), destination: t.to.toBase58(), lamports: t.lamports },
    }, 'parsed');
    assert.equal(tx.meta.fee, t.fee, 'meta.fee');
    return `jsonParsed: ${JSON.stringify(ix.parsed)}`;
  }],

  ['getSignaturesForAddress', async () => {
    const t = await transfer();
    const from = (await payer()).publicKey;
    const list = await conn.getSignaturesForAddress(from);
    const sigs = list.map((s) => s.signature);
    for (const [what, sig] of [['airdrop', state.airdropSig], ['transfer', t.sig]]) {
      assert.ok(sigs.includes(sig), `the ${what} ${sig} is not in ${JSON.stringify(sigs)}`);
    }
    for (let i = 1; i < list.length; i++) {
      assert.ok(list[i].slot <= list[i - 1].slot, `not newest first: ${JSON.stringify(list.map((s) => s.slot))}`);
    }
    assert.ok(sigs.indexOf(t.sig) < sigs.indexOf(state.airdropSig), 'the transfer is listed after the airdrop');
    const one = await conn.getSignaturesForAddress(from, { limit: 1 });
    assert.equal(one.length, 1, 'limit 1');
    assert.equal(one[0].signature, list[0].signature, 'limit 1 gives the newest');
    const older = await conn.getSignaturesForAddress(from, { before: t.sig });
    assert.ok(older.every((s) => s.slot <= t.slot) && older.some((s) => s.signature === state.airdropSig),
      `before the transfer: ${JSON.stringify(older.map((s) => s.signature))}`);
    return `${list.length} signatures for the payer, newest first (slots ${list.map((s) => s.slot).join(', ')}); limit and before work`;
  }],

  ['chainInfo', async () => {
    const [genesis, epoch, height, slot, first, minimum, fees] = await Promise.all([
      conn.getGenesisHash(), conn.getEpochInfo(), conn.getBlockHeight(), conn.getSlot(),
      conn.getFirstAvailableBlock(), conn.getMinimumLedgerSlot(), conn.getRecentPrioritizationFees(),
    ]);
    assert.equal(new web3.PublicKey(genesis).toBytes().length, 32, `genesis hash ${genesis}`);
    for (const k of ['absoluteSlot', 'blockHeight', 'epoch', 'slotIndex', 'slotsInEpoch']) {
      assert.equal(typeof epoch[k], 'number', `getEpochInfo().${k}: ${JSON.stringify(epoch)}`);
    }
    assert.ok(epoch.slotIndex < epoch.slotsInEpoch, `getEpochInfo ${JSON.stringify(epoch)}`);
    assert.ok(epoch.blockHeight <= epoch.absoluteSlot, `block height ${epoch.blockHeight} above slot ${epoch.absoluteSlot}`);
    assert.ok(height <= slot, `getBlockHeight ${height} above getSlot ${slot}`);
    assert.ok(first <= slot && minimum <= slot, `getFirstAvailableBlock ${first}, minimumLedgerSlot ${minimum}, slot ${slot}`);
    assert.ok(Array.isArray(fees), `getRecentPrioritizationFees ${JSON.stringify(fees)}`);
    return `genesis ${genesis}, slot ${slot}, block height ${height}, epoch ${epoch.epoch} (${epoch.slotIndex}/${epoch.slotsInEpoch}), ` +
      `first block ${first}, minimum ledger slot ${minimum}, ${fees.length} prioritization fees`;
  }],
];

async function main() {
  const names = process.argv.slice(2);
  for (const n of names) {
    if (!CHECKS.some(([name]) => name === n)) {
      console.log(`unknown check ${n}; the checks: ${CHECKS.map(([name]) => name).join(' ')}`);
      process.exit(2);
    }
  }
  const run = names.length ? CHECKS.filter(([name]) => names.includes(name)) : CHECKS;
  console.log(`@solana/web3.js ${require('@solana/web3.js/package.json').version} against ${RPC_URL} (websocket ${WS_URL || 'RPC port + 1'})`);
  let failed = 0;
  for (const [name, fn] of run) {
    try {
      const what = await within(STEP_MS, name, fn());
      console.log(`ok   ${name}  ${what}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}  ${(e && e.message) || e}`.replace(/\n/g, ' '));
    }
  }
  if (failed) {
    console.log(`FAIL: ${failed} of ${run.length} checks failed`);
    process.exit(1);
  }
  console.log(`PASS: ${run.length} checks`);
  process.exit(0); // the websocket would keep node alive
}

setTimeout(() => {
  console.log(`FAIL: the checks did not finish within ${DEADLINE_MS} ms`);
  process.exit(2);
}, DEADLINE_MS).unref();

main().catch((e) => {
  console.log(`FAIL: ${e.stack || e}`);
  process.exit(2);
});
