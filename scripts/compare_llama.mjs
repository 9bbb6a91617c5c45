// compare_llama.mjs — examples/forward.c against a real llama.cpp (node-llama-cpp's prebuilt CPU
// build): next-token probabilities at every position of one token sequence, and tokens/second
// of each on one thread. Not a test (a test must not need npm): the figures go in
// docs/forward.md.
//
//   mkdir -p /tmp/nlc && cd /tmp/nlc && npm i -E node-llama-cpp@3.21.1
//   NODE_LLAMA_CPP=/tmp/nlc/node_modules/node-llama-cpp \
//       node scripts/compare_llama.mjs build/forward build/demo.gguf [--prompt 1,2,3] [-n 16] [--q8]
// --q8: forward's products with x in 8 bits (TM_MATVEC_Q8), as ggml's are.
//
// The sequence is the prompt then forward's greedy picks; llama.cpp reads it teacher-forced in
// one batch (controlledEvaluate, the distribution asked for at every position), so both see the
// same tokens. llama.cpp's sampler is greedy with no penalty, so its probabilities are the
// softmax of its raw logits over the whole vocabulary. Reported: top-1 agreement over the
// positions, the largest |log p_forward - log p_llama.cpp| over every token of every position,
// and whether llama.cpp's own greedy decoding from the prompt picks the same tokens. The
// yardstick beside it: the same largest difference between forward's two modes (float32 and
// 8-bit x) on the same sequence, i.e. what rounding x to 8 bits alone moves.
// Speed: forward's own figures on one thread — the prompt through tm_matmul in one batch, and
// token by token through tm_matvec (--batch 1) for comparison; generation through tm_matvec —
// beside llama.cpp's prompt (one batch) and generation (one token per call, so JavaScript's
// overhead per call is in it), each on one thread.
import { execFileSync } from "node:child_process";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

function usage(msg) {
    console.error(`compare_llama: ${msg}\nusage: NODE_LLAMA_CPP=DIR node compare_llama.mjs FORWARD MODEL [--prompt IDS] [-n N] [--q8]`);
    process.exit(2);
}

const args = process.argv.slice(2);
const [forward, model] = args;
if (!forward || !model) usage("FORWARD and MODEL are needed");
let prompt = "1,2,3,4,5,6,7,8", nGen = 16, q8 = false;
for (let i = 2; i < args.length; i++) {
    if (args[i] === "--prompt" && i + 1 < args.length) prompt = args[++i];
    else if (args[i] === "-n" && i + 1 < args.length) nGen = Number(args[++i]);
    else if (args[i] === "--q8") q8 = true;
    else usage(`unknown argument '${args[i]}'`);
}
if (!process.env.NODE_LLAMA_CPP) usage("NODE_LLAMA_CPP names node-llama-cpp's directory");

// ---- forward: its logits at every position, its picks, its speed -------------------------
const out = execFileSync(forward, [model, "--prompt", prompt, "-n", String(nGen), "--logits",
                                   "--threads", "1", ...(q8 ? ["--q8"] : [])],
                         { encoding: "utf8", maxBuffer: 1 << 30 });
const seq = [], ours = [];
let picks = [];
for (const line of out.split("\n")) {
    const f = line.split(" ");
    if (f[0] === "logits") { seq.push(Number(f[2])); ours.push(f.slice(3).map(Number)); }
    else if (f[0] === "token") picks.push(Number(f[1]));
}
// speed from runs without --logits (printing them is not the forward pass), best of 3: the
// machine is shared, and the fastest run is the one least disturbed
function bestRate(lines, what) {
    return Math.max(...lines.map((l) => Number(l.match(new RegExp(`^${what}:.* ([0-9.]+) tokens/s`, "m"))[1])));
}
const timedRuns = (extra) => [1, 2, 3].map(() => execFileSync(forward, [model, "--prompt", prompt,
    "-n", String(nGen), "--threads", "1", ...(q8 ? ["--q8"] : []), ...extra], { encoding: "utf8" }));
const timed = timedRuns([]), timedByToken = timedRuns(["--batch", "1"]);
const promptIds = prompt.split(",").map(Number);

function logSoftmax(v) {
    const max = Math.max(...v);
    const lse = max + Math.log(v.reduce((s, x) => s + Math.exp(x - max), 0));
    return v.map((x) => x - lse);
}

// the yardstick: forward's other mode over the same sequence, given whole as its prompt
const other = execFileSync(forward, [model, "--prompt", seq.join(","), "-n", "1", "--logits",
                                     "--threads", "1", ...(q8 ? [] : ["--q8"])],
                           { encoding: "utf8", maxBuffer: 1 << 30 })
    .split("\n").filter((l) => l.startsWith("logits ")).map((l) => l.split(" ").slice(3).map(Number));
let modeDiff = 0;
for (let p = 0; p < seq.length; p++) {
    const a = logSoftmax(ours[p]), b = logSoftmax(other[p]);
    for (let t = 0; t < a.length; t++) modeDiff = Math.max(modeDiff, Math.abs(a[t] - b[t]));
}

// ---- llama.cpp ------------------------------------------------------------------------------
const { getLlama, LlamaLogLevel } = await import(
    pathToFileURL(join(resolve(process.env.NODE_LLAMA_CPP), "dist", "index.js")).href);
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const lm = await llama.loadModel({ modelPath: resolve(model), gpuLayers: 0 });
const nVocab = ours[0].length;
const ctxSize = 2 * (seq.length + nGen + 8);
const ctx = await lm.createContext({ contextSize: ctxSize, batchSize: 512, threads: 1,
                                     sequences: 2 });

// teacher-forced: the distribution after each token of forward's sequence
const seqA = ctx.getSequence();
const res = await seqA.controlledEvaluate(seq.map((t) => [t, { generateNext: { probabilities: true } }]));
const disagree = [];
let agree = 0, maxDiff = 0, maxAt = null, zeros = 0, minMargin = Infinity, spread = 0;
for (let p = 0; p < seq.length; p++) {
    const probs = res[p].next.probabilities;
    if (probs.size !== nVocab) throw new Error(`llama.cpp gave ${probs.size} probabilities, not ${nVocab}`);
    const mine = logSoftmax(ours[p]);
    let bestMine = 0;
    for (let t = 1; t < nVocab; t++) if (mine[t] > mine[bestMine]) bestMine = t;
    const bestTheirs = probs.keys().next().value; // the map is sorted, highest first
    if (bestMine === bestTheirs) agree++;
    else disagree.push(`position ${p}: forward ${bestMine}, llama.cpp ${bestTheirs}, forward's margin ` +
                       (mine[bestMine] - mine[bestTheirs]).toExponential(2));
    // what the difference is measured against: forward's gap between its first and second
    // choice, and the range of its log-probabilities
    const sorted = [...mine].sort((x, y) => y - x);
    minMargin = Math.min(minMargin, sorted[0] - sorted[1]);
    spread = Math.max(spread, sorted[0] - sorted[sorted.length - 1]);
    for (const [t, pr] of probs) {
        if (pr <= 0) { zeros++; continue; } // a float32 probability underflowed: no log
        const d = Math.abs(mine[t] - Math.log(pr));
        if (d > maxDiff) { maxDiff = d; maxAt = { position: p, token: t }; }
    }
}

// timing: the prompt in one batch, then greedy generation one token per call; best of 3
const seqB = ctx.getSequence();
let theirPicks, promptRate = 0, genRate = 0;
for (let rep = 0; rep < 3; rep++) {
    await seqB.clearHistory();
    const t0 = performance.now();
    let r = await seqB.controlledEvaluate(promptIds.map((t, i) =>
        i === promptIds.length - 1 ? [t, { generateNext: { token: true } }] : t));
    const t1 = performance.now();
    theirPicks = [r[promptIds.length - 1].next.token];
    for (let i = 1; i < nGen; i++) {
        r = await seqB.controlledEvaluate([[theirPicks[i - 1], { generateNext: { token: true } }]]);
        theirPicks.push(r[0].next.token);
    }
    const t2 = performance.now();
    promptRate = Math.max(promptRate, promptIds.length / ((t1 - t0) / 1e3));
    genRate = Math.max(genRate, (nGen - 1) / ((t2 - t1) / 1e3));
}

console.log(`model ${model}, prompt [${prompt}], ${nGen} new tokens, forward with x in ${q8 ? "8 bits" : "float32"}`);
console.log(`positions compared: ${seq.length}; top-1 agreement ${agree}/${seq.length}`);
for (const d of disagree) console.log(`  top-1 differs at ${d}`);
console.log(`largest |log p difference|: ${maxDiff.toExponential(3)} (position ${maxAt?.position}, token ${maxAt?.token}; ${zeros} zero probabilities skipped)`);
console.log(`beside it, forward float32 against forward 8-bit x: largest |log p difference| ${modeDiff.toExponential(3)}`);
console.log(`forward's smallest top-1 margin ${minMargin.toExponential(3)}, widest log p range ${spread.toFixed(3)}`);
console.log(`greedy picks: forward [${picks}]`);
console.log(`              llama.cpp [${theirPicks}] ${JSON.stringify(picks) === JSON.stringify(theirPicks) ? "(the same)" : "(DIFFERENT)"}`);
console.log(`forward, 1 thread, best of 3: prompt (tm_matmul, one batch) ${bestRate(timed, "prompt").toFixed(1)} tokens/s ` +
            `(token by token with tm_matvec: ${bestRate(timedByToken, "prompt").toFixed(1)}), ` +
            `generation (tm_matvec) ${bestRate(timed, "generated").toFixed(1)} tokens/s`);
console.log(`llama.cpp ${llama.llamaCppRelease?.release ?? ""} (CPU, 1 thread), best of 3: prompt (one batch) ${promptRate.toFixed(1)} tokens/s, ` +
            `generation ${genRate.toFixed(1)} tokens/s`);
await ctx.dispose();
await lm.dispose();
await llama.dispose();
