'use strict';
/* The S3-compatible server of the s3:// tests (tests/test_s3.c): s3rver 3.7.1 on 127.0.0.1, a
 * port the kernel chooses, with two things s3rver does not do and the tests need:
 *
 *  - it checks Signature V4. s3rver 3.7.1 knows the access key S3RVER (secret S3RVER) and
 *    refuses any other key with InvalidAccessKeyId, but takes every V4 signature of a known key
 *    as good ("Signature version 4 calculation is unimplemented", lib/middleware/
 *    authentication.js). Here a V4 request of a known key is checked as AWS does (the canonical
 *    request, the string to sign, the derived key) and refused with SignatureDoesNotMatch when
 *    its signature differs: this is code of its own, not tensormap's nor libcurl's.
 *  - the bucket "private" refuses anonymous requests with AccessDenied (s3rver keeps no ACLs or
 *    bucket policies: every bucket is public to it).
 *
 * It logs one JSON line per request (method, path, range, status, body bytes written, the
 * Authorization and x-amz-security-token headers), answers GET /_quiet once no other request is
 * in progress (as tests/support/http_server.py does), and GET /_put?bucket=B&key=K&path=P
 * stores the local file P as object K of bucket B.
 *
 *   node serve.js --dir DIR --port-file FILE --log FILE
 */
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const S3rver = require('s3rver');
const S3Object = require('s3rver/lib/models/object');

const SECRETS = { S3RVER: 'S3RVER' }; /* s3rver's own key pair */
const PRIVATE_BUCKET = 'private';

function arg(name) {
  const i = process.argv.indexOf(name);
  if (i < 0 || i + 1 >= process.argv.length) {
    console.error(`usage: node serve.js --dir DIR --port-file FILE --log FILE (${name} missing)`);
    process.exit(2);
  }
  return process.argv[i + 1];
}

const dir = arg('--dir');
const portFile = arg('--port-file');
const logFile = arg('--log');

const hmac = (key, s) => crypto.createHmac('sha256', key).update(s).digest();
const sha256hex = s => crypto.createHash('sha256').update(s).digest('hex');

/* "AWS4-HMAC-SHA256 Credential=K/DATE/REGION/s3/aws4_request, SignedHeaders=a;b, Signature=X" */
function parseV4(header) {
  const m = /^AWS4-HMAC-SHA256 (.*)$/.exec(header);
  if (!m) return null;
  const parts = {};
  for (const p of m[1].split(',')) {
    const [k, ...v] = p.trim().split('=');
    parts[k] = v.join('=');
  }
  if (!parts.Credential || !parts.SignedHeaders || !parts.Signature) return null;
  const [key, date, region, service, term] = parts.Credential.split('/');
  return { key, date, region, service, term, signed: parts.SignedHeaders, signature: parts.Signature };
}

/* The signature AWS computes for req with secret (docs.aws.amazon.com, "Create a signed AWS API
 * request"; S3 neither normalizes nor encodes the path again). */
function expectedSignature(req, auth, secret) {
  const url = new URL(req.url, 'http://x');
  const enc = s => encodeURIComponent(s).replace(/[!'()*]/g, c => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  const query = [...url.searchParams].map(([k, v]) => `${enc(k)}=${enc(v)}`).sort().join('&');
  const names = auth.signed.split(';');
  const headers = names.map(n => `${n}:${String(req.headers[n] || '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const payload = req.headers['x-amz-content-sha256'] || sha256hex('');
  const canonical = [req.method, url.pathname, query, headers, auth.signed, payload].join('\n');
  const scope = [auth.date, auth.region, auth.service, auth.term].join('/');
  const toSign = ['AWS4-HMAC-SHA256', req.headers['x-amz-date'] || '', scope, sha256hex(canonical)].join('\n');
  let k = hmac('AWS4' + secret, auth.date);
  k = hmac(hmac(hmac(k, auth.region), auth.service), auth.term);
  return hmac(k, toSign).toString('hex');
}

function refuse(res, status, code, message) {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/xml');
  res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`);
}

const server = new S3rver({ silent: true, directory: dir, vhostBuckets: false,
  configureBuckets: [{ name: 'models' }, { name: PRIVATE_BUCKET }] });
const s3 = server.callback();
let inProgress = 0;
const log = fs.openSync(logFile, 'a');

function quiet(res) {
  if (inProgress > 0) return setTimeout(() => quiet(res), 10);
  res.end('quiet\n');
}

async function put(url, res) {
  const q = url.searchParams;
  try {
    await server.store.putObject(new S3Object(q.get('bucket'), q.get('key'),
      fs.readFileSync(q.get('path')), { 'content-type': 'application/octet-stream' }));
    res.end('stored\n');
  } catch (e) {
    res.statusCode = 500;
    res.end(String(e) + '\n');
  }
}

function handle(req, res) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/_quiet') return quiet(res);
  if (url.pathname === '/_put') return put(url, res);
  inProgress++;
  let bytes = 0;
  const write = res.write, end = res.end;
  res.write = function (chunk, ...rest) {
    if (chunk && typeof chunk !== 'function') bytes += Buffer.byteLength(chunk);
    return write.call(this, chunk, ...rest);
  };
  res.end = function (chunk, ...rest) {
    if (chunk && typeof chunk !== 'function') bytes += Buffer.byteLength(chunk);
    return end.call(this, chunk, ...rest);
  };
  res.on('close', () => {
    inProgress--;
    fs.writeSync(log, JSON.stringify({
      method: req.method, path: req.url, range: req.headers.range || null, status: res.statusCode,
      bytes, authorization: req.headers.authorization || null,
      token: req.headers['x-amz-security-token'] || null,
    }) + '\n');
  });
  const header = req.headers.authorization;
  const auth = header ? parseV4(header) : null;
  if (auth && SECRETS[auth.key] !== undefined &&
      expectedSignature(req, auth, SECRETS[auth.key]) !== auth.signature)
    return refuse(res, 403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.');
  if (!header && url.pathname.split('/')[1] === PRIVATE_BUCKET)
    return refuse(res, 403, 'AccessDenied', 'Access Denied');
  return s3(req, res);
}

server.configureBuckets().then(() => {
  const h = http.createServer(handle);
  h.listen(0, '127.0.0.1', () => {
    fs.writeFileSync(portFile + '.tmp', String(h.address().port));
    fs.renameSync(portFile + '.tmp', portFile);
  });
  process.on('SIGTERM', () => process.exit(0));
}, e => {
  console.error(e);
  process.exit(1);
});
