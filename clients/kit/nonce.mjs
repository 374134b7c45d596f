// nonce.mjs runs @solana/kit's durable-nonce flow and the System
// program's seed-derived accounts against a running tpu
// (`tpu run --no-gen`), with the official System program client. It
// prints one line per check, "ok   <name>  <what it saw>" or
// "FAIL <name>  <why>", then "PASS: N checks", and exits 0 only if every
// check passed.
//
//   RPC_URL=http://127.0.0.1:8899 WS_URL=ws://127.0.0.1:8900 node nonce.mjs
//
// The checks depend on each other and run in order. Waiting for the
// signing blockhash to expire takes 151 slots: run tpu with a short
// --slot-time (cmd/tpu TestKitNonce uses 20ms). Each check gets
// STEP_TIMEOUT_MS (60 s), the whole run DEADLINE_MS (180 s).

import assert from 'node:assert/strict';
import {
  address,
  airdropFactory,
  appendTransactionMessageInstructions,
  compileTransactionMessage,
  createAddressWithSeed,
  createSolanaRpc,
  createSolanaRpcSubscriptions,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getCompiledTransactionMessageEncoder,
  getSignatureFromTransaction,
  lamports,
  pipe,
  sendAndConfirmDurableNonceTransactionFactory,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  setTransactionMessageLifetimeUsingDurableNonce,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import {
  SYSTEM_PROGRAM_ADDRESS,
  fetchNonce,
  getAdvanceNonceAccountInstruction,
  getCreateAccountInstruction,
  getCreateAccountWithSeedInstruction,
  getInitializeNonceAccountInstruction,
  getNonceSize,
  getTransferSolInstruction,
  getTransferSolWithSeedInstruction,
} from '@solana-program/system';

const RPC_URL = process.env.RPC_URL || 'http://127.0.0.1:8899';
const WS_URL = process.env.WS_URL || 'ws://127.0.0.1:8900';
const STEP_MS = Number(process.env.STEP_TIMEOUT_MS || 60_000);
const DEADLINE_MS = Number(process.env.DEADLINE_MS || 180_000);

const rpc = createSolanaRpc(RPC_URL);
const subs = createSolanaRpcSubscriptions(WS_URL);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const json = (v) => JSON.stringify(v, (k, x) => typeof x === 'bigint' ? x.toString() : x);

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
    const { value: [st] } = await rpc.getSignatureStatuses([sig]).send();
    if (st && (st.confirmationStatus === 'confirmed' || st.confirmationStatus === 'finalized')) {
      if (st.err) throw new Error(`${sig} landed with an error: ${json(st.err)}`);
      return st;
    }
    if (Date.now() > end) throw new Error(`${sig} not confirmed within ${ms} ms`);
    await sleep(100);
  }
}

// send signs instructions over the latest blockhash with payer as fee
// payer (and any signers the instructions name), sends them and polls
// for their confirmation (with 20ms slots, a block-height expiry could
// outrun a subscription).
async function send(payer, instructions) {
  const { value: bh } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
  const msg = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(bh, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const tx = await signTransactionMessageWithSigners(msg);
  const sig = await rpc.sendTransaction(getBase64EncodedWireTransaction(tx), { encoding: 'base64' }).send();
  assert.equal(sig, getSignatureFromTransaction(tx));
  await confirmed(sig);
  return sig;
}

// refusal is the text of a JSON-RPC error kit threw: its message and its
// cause's, where kit keeps the transaction error.
function refusal(e) {
  const parts = [];
  for (let x = e; x; x = x.cause) parts.push(String(x.message || ''), json(x.context || {}));
  return parts.join(' ');
}

// The state the checks share.
const s = {};

const CHECKS = [
  // A funded wallet makes a nonce account it is the authority of.
  ['createNonceAccount', async () => {
    s.payer = await generateKeyPairSigner();
    await airdropFactory({ rpc, rpcSubscriptions: subs })({
      recipientAddress: s.payer.address, lamports: lamports(2_000_000_000n), commitment: 'confirmed',
    });
    s.nonce = await generateKeyPairSigner();
    const space = BigInt(getNonceSize());
    const rent = await rpc.getMinimumBalanceForRentExemption(space).send();
    const sig = await send(s.payer, [
      getCreateAccountInstruction({ payer: s.payer, newAccount: s.nonce, lamports: rent, space, programAddress: SYSTEM_PROGRAM_ADDRESS }),
      getInitializeNonceAccountInstruction({ nonceAccount: s.nonce.address, nonceAuthority: s.payer.address }),
    ]);
    const { data, lamports: held, programAddress } = await fetchNonce(rpc, s.nonce.address, { commitment: 'confirmed' });
    assert.equal(programAddress, SYSTEM_PROGRAM_ADDRESS);
    assert.equal(held, rent);
    assert.equal(data.authority, s.payer.address);
    assert.equal(data.state, 1, `nonce state ${data.state}, not initialized`);
    assert.equal(data.lamportsPerSignature, 5000n);
    s.nonceValue = data.blockhash;
    return `nonce account ${s.nonce.address} (${sig}), ${space} bytes, ${rent} lamports, nonce ${s.nonceValue}`;
  }],
  // Offline: a transfer whose lifetime is the nonce, signed now, sent
  // later. kit puts AdvanceNonceAccount first.
  ['signOffline', async () => {
    s.signedWith = (await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send()).value.blockhash;
    s.dest = (await generateKeyPairSigner()).address;
    const msg = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(s.payer, m),
      (m) => setTransactionMessageLifetimeUsingDurableNonce({
        nonce: s.nonceValue, nonceAccountAddress: s.nonce.address, nonceAuthorityAddress: s.payer.address,
      }, m),
      (m) => appendTransactionMessageInstructions([
        getTransferSolInstruction({ source: s.payer, destination: s.dest, amount: 1_000_000n }),
      ], m),
    );
    const advance = getAdvanceNonceAccountInstruction({ nonceAccount: s.nonce.address, nonceAuthority: s.payer });
    assert.deepEqual(msg.instructions[0].data, advance.data, 'the first instruction is not AdvanceNonceAccount');
    assert.equal(msg.instructions[0].accounts[0].address, s.nonce.address);
    s.tx = await signTransactionMessageWithSigners(msg);
    s.sig = getSignatureFromTransaction(s.tx);
    const wire = getCompiledTransactionMessageEncoder().encode(compileTransactionMessage(msg));
    const { value: fee } = await rpc.getFeeForMessage(Buffer.from(wire).toString('base64'), { commitment: 'confirmed' }).send();
    assert.equal(fee, 5000n, `getFeeForMessage of the nonce transaction: ${fee}`);
    return `signed over nonce ${s.nonceValue} (blockhash then ${s.signedWith}), fee ${fee}`;
  }],
  // Submit once the blockhash of the signing time has expired, with
  // kit's durable-nonce sender (it watches the nonce account).
  ['submitAfterExpiry', async () => {
    let polls = 0;
    for (;; polls++) {
      const { value } = await rpc.isBlockhashValid(s.signedWith, { commitment: 'confirmed' }).send();
      if (!value) break;
      await sleep(100);
    }
    const sendNonce = sendAndConfirmDurableNonceTransactionFactory({ rpc, rpcSubscriptions: subs });
    await sendNonce(s.tx, { commitment: 'confirmed' });
    const { value: [st] } = await rpc.getSignatureStatuses([s.sig]).send();
    assert.ok(st, `no status for ${s.sig}`);
    assert.equal(st.err, null);
    const { value: bal } = await rpc.getBalance(s.dest, { commitment: 'confirmed' }).send();
    assert.equal(bal, 1_000_000n);
    const after = await fetchNonce(rpc, s.nonce.address, { commitment: 'confirmed' });
    assert.notEqual(after.data.blockhash, s.nonceValue, 'the nonce did not advance');
    s.nonceAfter = after.data.blockhash;
    return `${s.sig} landed after ${s.signedWith} expired (${polls} polls); recipient ${bal}, nonce now ${s.nonceAfter}`;
  }],
  // With preflight the send is refused; without, it is taken (as Agave
  // takes it) and dropped by the bank: no second transfer, no advance.
  ['secondSubmitRefused', async () => {
    const wire = getBase64EncodedWireTransaction(s.tx);
    let why;
    try {
      const sig = await rpc.sendTransaction(wire, { encoding: 'base64' }).send();
      throw new Error(`the second submit was accepted: ${sig}`);
    } catch (e) {
      why = refusal(e);
      if (/second submit was accepted/.test(why)) throw e;
      assert.match(why, /Blockhash not found|BlockhashNotFound|already been processed|AlreadyProcessed/, why);
    }
    const sig = await rpc.sendTransaction(wire, { encoding: 'base64', skipPreflight: true }).send();
    assert.equal(sig, s.sig);
    const from = await rpc.getSlot({ commitment: 'confirmed' }).send();
    while (await rpc.getSlot({ commitment: 'confirmed' }).send() < from + 20n) await sleep(50);
    const { value: bal } = await rpc.getBalance(s.dest, { commitment: 'confirmed' }).send();
    assert.equal(bal, 1_000_000n, 'the transfer ran twice');
    const after = await fetchNonce(rpc, s.nonce.address, { commitment: 'confirmed' });
    assert.equal(after.data.blockhash, s.nonceAfter, 'the nonce moved again');
    return `refused with preflight (${why.slice(0, 120)}); without, dropped: recipient still ${bal}, nonce still ${s.nonceAfter}`;
  }],
  // An account at the address derived from a base, a seed and an owner:
  // the payer pays, the base signs.
  ['createAccountWithSeed', async () => {
    s.base = await generateKeyPairSigner();
    s.owner = (await generateKeyPairSigner()).address; // any program may own it
    s.seed = 'kit-seed';
    s.derived = await createAddressWithSeed({ baseAddress: s.base.address, programAddress: s.owner, seed: s.seed });
    const space = 64n;
    const rent = await rpc.getMinimumBalanceForRentExemption(space).send();
    const sig = await send(s.payer, [getCreateAccountWithSeedInstruction({
      payer: s.payer, newAccount: s.derived, baseAccount: s.base, base: s.base.address, seed: s.seed,
      amount: rent, space, programAddress: s.owner,
    })]);
    const { value } = await rpc.getAccountInfo(s.derived, { commitment: 'confirmed', encoding: 'base64' }).send();
    assert.ok(value, `no account at ${s.derived}`);
    assert.equal(value.owner, s.owner);
    assert.equal(value.lamports, rent);
    assert.equal(value.space, space);
    const data = Buffer.from(value.data[0], 'base64');
    assert.equal(data.length, 64);
    assert.ok(data.every((b) => b === 0), 'a new account holds zeros');
    const { value: baseInfo } = await rpc.getAccountInfo(s.base.address, { commitment: 'confirmed' }).send();
    assert.equal(baseInfo, null, 'the base paid nothing and has no account');
    return `${s.derived} = (${s.base.address}, "${s.seed}", ${s.owner}) (${sig}): owner ${value.owner}, ${value.space} bytes, ${value.lamports} lamports`;
  }],
  // A System-owned account at a seed address spends by its base's
  // signature alone (TransferWithSeed).
  ['transferWithSeed', async () => {
    const seed = 'kit-wallet';
    const from = await createAddressWithSeed({ baseAddress: s.base.address, programAddress: SYSTEM_PROGRAM_ADDRESS, seed });
    await send(s.payer, [getTransferSolInstruction({ source: s.payer, destination: from, amount: 10_000_000n })]);
    const to = address((await generateKeyPairSigner()).address);
    const sig = await send(s.payer, [getTransferSolWithSeedInstruction({
      source: from, baseAccount: s.base, destination: to, amount: 3_000_000n, fromSeed: seed, fromOwner: SYSTEM_PROGRAM_ADDRESS,
    })]);
    const { value: left } = await rpc.getBalance(from, { commitment: 'confirmed' }).send();
    const { value: got } = await rpc.getBalance(to, { commitment: 'confirmed' }).send();
    assert.equal(left, 7_000_000n);
    assert.equal(got, 3_000_000n);
    return `${from} ("${seed}") sent 3000000 to ${to} (${sig}): ${left} left`;
  }],
];

const deadline = setTimeout(() => {
  console.log(`FAIL deadline  the run overran ${DEADLINE_MS} ms`);
  process.exit(2);
}, DEADLINE_MS);

let failed = 0;
for (const [name, fn] of CHECKS) {
  try {
    const saw = await within(STEP_MS, name, fn());
    console.log(`ok   ${name}  ${saw}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}  ${e && e.stack ? e.stack : e}`);
    break; // the checks depend on each other
  }
}
clearTimeout(deadline);
if (failed) {
  process.exit(1);
}
console.log(`PASS: ${CHECKS.length} checks`);
process.exit(0);
