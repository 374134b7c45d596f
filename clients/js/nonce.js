'use strict';
// nonce.js runs @solana/web3.js 1.x's durable-nonce flow against a
// running tpu (`tpu run --no-gen`), and reads back a lookup table's
// calls into the System program, printing one line per check as
// check.js does ("ok   <name>  <what it saw>" or "FAIL <name>  <why>"),
// then "PASS: N checks". It exits 0 only if every check passed.
//
//   RPC_URL=http://127.0.0.1:8899 node nonce.js
//
// The checks depend on each other and run in order. Waiting for the
// signing blockhash to expire takes 151 slots: run tpu with a short
// --slot-time (cmd/tpu TestJSNonce uses 20ms).

const web3 = require('@solana/web3.js');
const assert = require('node:assert/strict');

const RPC_URL = process.env.RPC_URL || 'http://127.0.0.1:8899';
const STEP_MS = Number(process.env.STEP_TIMEOUT_MS || 60_000);
const DEADLINE_MS = Number(process.env.DEADLINE_MS || 180_000);
const SYSTEM = web3.SystemProgram.programId.toBase58();

const conn = new web3.Connection(RPC_URL, { commitment: 'confirmed', disableRetryOnRateLimit: true });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function within(ms, what, p) {
  let timer;
  const t = new Promise((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

async function confirmed(sig, ms = 20_000) {
  const end = Date.now() + ms;
  for (;;) {
    const { value: [st] } = await conn.getSignatureStatuses([sig]);
    if (st && (st.confirmationStatus === 'confirmed' || st.confirmationStatus === 'finalized')) {
      if (st.err) throw new Error(`${sig} landed with an error: ${JSON.stringify(st.err)}`);
      return st;
    }
    if (Date.now() > end) throw new Error(`${sig} not confirmed within ${ms} ms`);
    await sleep(100);
  }
}

const state = {};

// send signs tx with signers over the latest blockhash, sends it and
// polls for its confirmation (no websocket: with short slots, web3.js's
// block-height expiry would outrun its subscription).
async function send(tx, signers) {
  tx.recentBlockhash = (await conn.getLatestBlockhash()).blockhash;
  tx.feePayer = signers[0].publicKey;
  tx.sign(...signers);
  const sig = await conn.sendRawTransaction(tx.serialize());
  await confirmed(sig);
  return sig;
}

const CHECKS = [
  // A funded wallet makes a nonce account it is the authority of.
  ['createNonceAccount', async () => {
    const payer = web3.Keypair.generate();
    await confirmed(await conn.requestAirdrop(payer.publicKey, 2 * web3.LAMPORTS_PER_SOL));
    const nonce = web3.Keypair.generate();
    const rent = await conn.getMinimumBalanceForRentExemption(web3.NONCE_ACCOUNT_LENGTH);
    const tx = new web3.Transaction().add(web3.SystemProgram.createNonceAccount({
      fromPubkey: payer.publicKey, noncePubkey: nonce.publicKey, authorizedPubkey: payer.publicKey, lamports: rent,
    }));
    const sig = await send(tx, [payer, nonce]);
    const info = await conn.getNonce(nonce.publicKey);
    assert.ok(info, 'getNonce: no nonce account');
    assert.equal(info.authorizedPubkey.toBase58(), payer.publicKey.toBase58());
    Object.assign(state, { payer, nonce, nonceValue: info.nonce });
    return `nonce account ${nonce.publicKey.toBase58()} (${sig}), nonce ${info.nonce}`;
  }],
  // Offline: a transfer over the nonce (nonceInfo), signed now, sent later.
  ['signOffline', async () => {
    const { payer, nonce, nonceValue } = state;
    state.signedWith = (await conn.getLatestBlockhash()).blockhash;
    state.dest = web3.Keypair.generate().publicKey;
    const tx = new web3.Transaction({
      feePayer: payer.publicKey,
      nonceInfo: {
        nonce: nonceValue,
        nonceInstruction: web3.SystemProgram.nonceAdvance({ noncePubkey: nonce.publicKey, authorizedPubkey: payer.publicKey }),
      },
    }).add(web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: state.dest, lamports: 1_000_000 }));
    tx.sign(payer);
    state.raw = tx.serialize();
    const { value: fee } = await conn.getFeeForMessage(tx.compileMessage());
    assert.equal(fee, 5000, `getFeeForMessage of the nonce transaction: ${fee}`);
    return `signed over nonce ${nonceValue}, fee ${fee}`;
  }],
  // Submit once the blockhash of the signing time has expired.
  ['submitAfterExpiry', async () => {
    for (;;) {
      const { value } = await conn.isBlockhashValid(state.signedWith);
      if (!value) break;
      await sleep(100);
    }
    const sig = await conn.sendRawTransaction(state.raw); // with preflight
    await confirmed(sig);
    const bal = await conn.getBalance(state.dest);
    assert.equal(bal, 1_000_000);
    const after = await conn.getNonce(state.nonce.publicKey);
    assert.notEqual(after.nonce, state.nonceValue, 'the nonce did not advance');
    return `${sig} landed after ${state.signedWith} expired; recipient ${bal}, nonce now ${after.nonce}`;
  }],
  ['secondSubmitRefused', async () => {
    try {
      await conn.sendRawTransaction(state.raw);
    } catch (e) {
      assert.match(String(e.message), /Blockhash not found|already been processed/);
      return `refused: ${String(e.message).split('\n')[0]}`;
    }
    throw new Error('the second submit was accepted');
  }],
  // A lookup table's creation calls System three times: getTransaction
  // shows the calls at stack height 2 and their logs.
  ['lookupTableInner', async () => {
    const { payer } = state;
    const slot = await conn.getSlot('finalized');
    const [ix, table] = web3.AddressLookupTableProgram.createLookupTable({ authority: payer.publicKey, payer: payer.publicKey, recentSlot: slot });
    const sig = await send(new web3.Transaction().add(ix), [payer]);
    const got = await conn.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    const inner = got.meta.innerInstructions;
    assert.equal(inner.length, 1, JSON.stringify(inner));
    const keys = got.transaction.message.staticAccountKeys.map((k) => k.toBase58());
    assert.equal(inner[0].instructions.length, 3, JSON.stringify(inner));
    for (const i of inner[0].instructions) {
      assert.equal(keys[i.programIdIndex], SYSTEM);
      assert.equal(i.stackHeight, 2);
    }
    const invokes = got.meta.logMessages.filter((l) => l === `Program ${SYSTEM} invoke [2]`).length;
    assert.equal(invokes, 3, got.meta.logMessages.join(' | '));
    return `table ${table.toBase58()}: 3 System calls at stack height 2, ${invokes} "invoke [2]" logs`;
  }],
];

async function main() {
  console.log(`@solana/web3.js ${require('@solana/web3.js/package.json').version} against ${RPC_URL}`);
  let failed = 0;
  for (const [name, fn] of CHECKS) {
    try {
      console.log(`ok   ${name}  ${await within(STEP_MS, name, fn())}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}  ${(e && e.message) || e}`.replace(/\n/g, ' '));
      break; // the checks depend on each other
    }
  }
  if (failed) {
    console.log(`FAIL: ${failed} of ${CHECKS.length} checks failed`);
    process.exit(1);
  }
  console.log(`PASS: ${CHECKS.length} checks`);
  process.exit(0);
}

setTimeout(() => {
  console.log(`FAIL: the checks did not finish within ${DEADLINE_MS} ms`);
  process.exit(2);
}, DEADLINE_MS).unref();

main().catch((e) => {
  console.log(`FAIL: ${e.stack || e}`);
  process.exit(2);
});
