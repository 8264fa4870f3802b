#!/usr/bin/env node
// Two looks 10 s apart with Node's fetch and setTimeout (tests/test_vtime_step.py).
let base = process.env.FLY_API_HOSTNAME.replace(/\/$/, ""); if (!base.startsWith("http")) base = "http://" + base;
const get = async (p) => (await fetch(`${base}/v1/apps/${process.env.FLY_APP_NAME}${p}`, {headers: {Authorization: `Bearer ${process.env.FLY_API_TOKEN}`}})).json();
const t0 = Date.now(); await get("/machines"); await new Promise(r => setTimeout(r, 10000)); const m = await get("/machines");
console.log(`node ${(Date.now()-t0)/1000} s ${m.map(x => x.state)}`);
