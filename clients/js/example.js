// The README's JavaScript example (cmd/tpu TestJSClient runs it, and
// checks that the README shows it as it is here).
const web3 = require('@solana/web3.js');

async function main() {
  const connection = new web3.Connection(process.env.RPC_URL || 'http://127.0.0.1:8899', {
    commitment: 'confirmed',
    wsEndpoint: process.env.WS_URL, // unset: the RPC port + 1, where tpu run serves it
  });
  const payer = web3.Keypair.generate();
  const airdrop = await connection.requestAirdrop(payer.publicKey, web3.LAMPORTS_PER_SOL);
  await connection.confirmTransaction({ signature: airdrop, ...(await connection.getLatestBlockhash()) });

  const to = web3.Keypair.generate().publicKey;
  const tx = new web3.Transaction().add(
    web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000 }),
  );
  const sig = await web3.sendAndConfirmTransaction(connection, tx, [payer]);
  console.log('transfer', sig, 'recipient balance', await connection.getBalance(to));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
