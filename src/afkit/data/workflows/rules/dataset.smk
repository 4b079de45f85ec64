# Datasets: a manifest per dataset; generated datasets are written into the storage's local path.


localrules:
    dataset,


rule dataset:
    output:
        f"{RESULTS}/dataset/{{dataset}}.json",
    log:
        f"{RESULTS}/dataset/{{dataset}}.log",
    params:
        spec=lambda wc: CFG["datasets"][wc.dataset],
        storage=lambda wc: CFG["storage"][CFG["datasets"][wc.dataset]["storage"]],
    run:
        afkit_rules.dataset(wildcards, output, params, log)
