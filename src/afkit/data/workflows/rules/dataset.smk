# Datasets: a manifest per dataset; generated datasets are written into the storage's local path
# (kind ao2d/esd: by the ROOT of the campaign's image, so they need the image first).


localrules:
    dataset,


rule dataset:
    input:
        image=lambda wc: (
            [f"{RESULTS}/image/image.json"]
            if afkit_rules.dataset_needs_image(CFG, wc.dataset)
            else []
        ),
    output:
        f"{RESULTS}/dataset/{{dataset}}.json",
    log:
        f"{RESULTS}/dataset/{{dataset}}.log",
    params:
        spec=lambda wc: CFG["datasets"][wc.dataset],
        storage=lambda wc: CFG["storage"][CFG["datasets"][wc.dataset]["storage"]],
        apptainer_args=lambda wc: afkit_rules.dataset_apptainer_args(CFG, wc.dataset),
    run:
        afkit_rules.dataset(wildcards, input, output, params, log)
