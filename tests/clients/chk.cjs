const Ajv = require("ajv"); const addFormats=require("ajv-formats");
const schema = require("wot-thing-description-types/schema/td-json-schema-validation.json");
const ajv = new Ajv({strict:false, allErrors:true}); addFormats(ajv);
const v = ajv.compile(schema);
const fs=require('fs'); const td=JSON.parse(fs.readFileSync(0,'utf8'));
console.log(v(td)); console.log(JSON.stringify(v.errors?.filter(e=>e.keyword!=='oneOf').map(e=>[e.instancePath,e.message,e.params]),null,0).slice(0,3000));
console.log(schema.title, JSON.stringify(schema.definitions?.thing_context || schema.properties["@context"]).slice(0,800))
