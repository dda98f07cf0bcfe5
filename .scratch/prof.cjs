const fs=require('fs');const f=process.argv[2];const p=JSON.parse(fs.readFileSync(f));
const byId=new Map(p.nodes.map(n=>[n.id,n]));const self=new Map();
const dt=p.timeDeltas;let total=0;
for(let i=0;i<p.samples.length;i++){const n=byId.get(p.samples[i]);const d=dt[i]||0;total+=d;const k=n.callFrame.functionName+' '+(n.callFrame.url.split('/').slice(-3).join('/'))+':'+n.callFrame.lineNumber;self.set(k,(self.get(k)||0)+d);}
const byFile=new Map();for(const [k,v] of self){const file=k.split(' ')[1].replace(/:\d+$/,'').replace(/node_modules\/([^/]+).*/,'nm:$1');const g=k.includes('node_modules/')?('nm:'+k.split('node_modules/')[1].split('/')[0]):file;byFile.set(g,(byFile.get(g)||0)+v);}
console.log('total ms',total/1000);
console.log([...self].sort((a,b)=>b[1]-a[1]).slice(0,+process.argv[3]||30).map(([k,v])=>(v/total*100).toFixed(1)+'% '+k).join('\n'));
console.log('--- by file');console.log([...byFile].sort((a,b)=>b[1]-a[1]).slice(0,20).map(([k,v])=>(v/total*100).toFixed(1)+'% '+k).join('\n'));
