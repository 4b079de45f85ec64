# The image every job runs in: a SIF path, an oras:// reference (pulled once) or a tag built with
# `afkit image build`. image.json records its path, sha256 and tag (provenance of every job).


localrules:
    image,
    image_root,


rule image:
    output:
        f"{RESULTS}/image/image.json",
    log:
        f"{RESULTS}/image/image.log",
    params:
        image=CFG["image"],
        base_dir=str(CAMPAIGN.base_dir),
    run:
        afkit_rules.image(output, params, log)


# payload: root runs the image's own ROOT: an image without root.exe in its environment is refused
# here, before any job of the campaign runs (every job's input when a benchmark has payload root)
rule image_root:
    input:
        f"{RESULTS}/image/image.json",
    output:
        f"{RESULTS}/image/root.json",
    log:
        f"{RESULTS}/image/root.log",
    params:
        benchmarks=ROOT_PAYLOAD,
    run:
        afkit_rules.image_root(input, output, params, log)
