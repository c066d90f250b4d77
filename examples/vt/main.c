/* vt: the libvisiontrain command-line tool.
 *
 *   vt train    data=DIR [model=cls-n|FILE epochs=10 imgsz=32 batch=32 device=cpu save=FILE ...]
 *   vt val      model=FILE data=DIR [split=val batch=.. imgsz=.. device=..]
 *   vt predict  model=FILE source=IMAGE|DIR [IMAGE ...] [top=1]
 *   vt export   model=FILE [format=onnx out=FILE.onnx opset=17 batch=1|N|dynamic nms=0|1 ...]
 *   vt import   FILE.onnx [arch=resnet18 out=FILE.vtm imgsz=224]
 *   vt estimate [model=cls-n|FILE data=DIR | train=N val=N] [epochs=100 imgsz=640 batch=16
 *               gpu=all|NAME|local|cpu gpus=1 precision=tf32 calibrate=1 budget=USD deadline=H
 *               catalog=CSV ...]
 *   vt check    data=PATH [task=classify|detect|segment policy=drop|skip|fail min_size=10]
 *   vt dataset  split|subset|clone|stats data=PATH out=DIR ...
 *   vt info     [catalog=CSV]
 *   vt synth    data=DIR [classes=4 train=100 val=40 imgsz=32 seed=0]
 *   vt demo     [data=DIR save=FILE epochs=8 ...]
 *   vt help [COMMAND]     vt COMMAND --help
 *
 * Arguments are key=value, as in the most used trainers' CLIs.  Unknown keys and bad values are
 * rejected with the list of valid keys / the valid range.
 *
 * Exit codes: 0 success, 1 any other failure, 2 usage error, 3 data error (missing or unusable
 * dataset, image, model or catalog file), 4 interrupted (Ctrl-C).
 *
 * The tool uses the public API only.  Its files (examples/vt/): main.c the command table and
 * main(); help.c the help texts; common.c arguments, failures, formatting, SIGINT; progress.c
 * the training progress display; train.c train and demo; val_predict.c val and predict;
 * export.c export; import.c import;
 * data.c synth, check and the dataset tools; info_estimate.c info and estimate. */
#include <stdio.h>
#include <string.h>

#include "vt_cli.h"

/* ---- main ------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int (*fn)(args *);
} command;

static const command commands[] = {
    {"train", cmd_train},     {"val", cmd_val},     {"predict", cmd_predict},
    {"estimate", cmd_estimate}, {"check", cmd_check}, {"info", cmd_info},
    {"synth", cmd_synth},     {"demo", cmd_demo},   {"export", cmd_export},
    {"import", cmd_import},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
        return cmd_help(NULL, argc - 2, argv + 2);
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("vt %s (libvisiontrain ABI %u)\n", vt_version_string(), vt_abi_version());
        return 0;
    }
    if (!strcmp(cmd, "dataset")) {
        /* "vt dataset SUB key=value ...": one command name "dataset SUB" for the messages */
        static char name[64];
        if (argc < 3 || argv[2][0] == '-' || strchr(argv[2], '=') || !strcmp(argv[2], "help")) {
            print_help(argc < 3 ? stderr : stdout, help_for("dataset"));
            return argc < 3 ? EXIT_USAGE : 0;
        }
        snprintf(name, sizeof name, "dataset %.40s", argv[2]);
        args a;
        if (parse_args(name, argc - 3, argv + 3, &a)) return EXIT_USAGE;
        if (a.help) {
            print_help(stdout, help_for("dataset"));
            return 0;
        }
        return cmd_dataset(&a);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(cmd, commands[i].name)) continue;
        args a;
        if (parse_args(cmd, argc - 2, argv + 2, &a)) return EXIT_USAGE;
        if (a.help) {
            print_help(stdout, help_for(cmd));
            return 0;
        }
        return commands[i].fn(&a);
    }
    fprintf(stderr, "vt: unknown command '%s'; commands: train, val, predict, export, import, "
                    "estimate, check, dataset, info, synth, demo, help\n", cmd);
    return EXIT_USAGE;
}
