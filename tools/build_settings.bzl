# SPDX-License-Identifier: Apache-2.0
"""Command-line build settings, without bazel_skylib (encore builds offline).

In encore's own workspace: --//tools:NAME=VALUE; from a workspace that uses
encore: --@encore//tools:NAME=VALUE.
"""

BuildSettingInfo = provider(
    doc = "The value a build setting has in this build.",
    fields = ["value"],
)

def _string_flag_impl(ctx):
    value = ctx.build_setting_value
    if ctx.attr.values and value not in ctx.attr.values:
        fail("%s: '%s' is not one of %s" % (ctx.label, value, ", ".join(ctx.attr.values)))
    return [BuildSettingInfo(value = value)]

# A string flag; `values`, when given, lists the values it accepts.
string_flag = rule(
    implementation = _string_flag_impl,
    build_setting = config.string(flag = True),
    attrs = {"values": attr.string_list()},
)

def _string_list_flag_impl(ctx):
    return [BuildSettingInfo(value = ctx.build_setting_value)]

# A comma-separated list flag: --//tools:cuda_archs=sm_80,sm_90,compute_90.
string_list_flag = rule(
    implementation = _string_list_flag_impl,
    build_setting = config.string_list(flag = True),
)
